package main

import (
	"flag"
	"strconv"
	"strings"
)

// interleave moves the flags in args before the operands, keeping the
// order of each, so that `cosla get KEY --site us` reads as `cosla get
// --site us KEY`: package flag stops at the first operand. A flag's value
// is the next argument unless the flag is boolean or written --name=value.
// "-" (stdin) and negative numbers are operands; everything after "--" is
// an operand, so an operand that starts with "-" is written after "--".
// A name fs does not define stays a flag, for fs.Parse to refuse.
func interleave(fs *flag.FlagSet, args []string) []string {
	var flags, operands []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case !isFlag(arg):
			operands = append(operands, arg)
		default:
			flags = append(flags, arg)
			if takesValue(fs, arg) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	return append(append(flags, "--"), operands...)
}

// isFlag reports whether arg is written as a flag: a dash, then not a
// number.
func isFlag(arg string) bool {
	if len(arg) < 2 || arg[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(arg, 64)
	return err != nil
}

// takesValue reports whether the flag arg (-name or --name, without
// "=value") is one of fs's that takes a value.
func takesValue(fs *flag.FlagSet, arg string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}
