// Package cmdline parses the command lines of the examples, whose flags may come before, among
// or after the words of a goal or topic.
package cmdline

import "flag"

// Parse parses the flags of fs wherever they are among args and returns the other arguments,
// in order: research "a goal" -quiet is research -quiet "a goal". After "--" every argument is a
// word.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return words, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(words, rest...), nil
		}
		words, args = append(words, rest[0]), rest[1:]
	}
}
