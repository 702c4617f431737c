// Package osfile reads the files agents wrote as untrusted input: Open (and OpenIn,
// OpenRegular) refuses what is not a regular file without waiting on it, and ReadFile, ReadIn
// and ReadLine bound what they read (see read.go).
package osfile
