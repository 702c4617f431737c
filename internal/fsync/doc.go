// Package fsync makes written files and renames durable, sharing the work among writers: on
// Linux, one syncfs of a file system stands for every writer that asked while it waited, so many
// goroutines that write at once (a squad's workers finishing together) cost a few syncs, not
// one each. Elsewhere each file and folder is synced on its own.
package fsync
