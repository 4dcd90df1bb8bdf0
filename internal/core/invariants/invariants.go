// Package invariants switches on assertions that are too costly, or too
// fatal, for production builds. Tests and CI build with -tags invariants
// (see .ci/run); code checks a condition only when Enabled is true, and a
// failed assertion panics, because it means the code itself is wrong.
package invariants

import "fmt"

// Check panics with a formatted message if Enabled and cond is false.
func Check(cond bool, format string, args ...any) {
	if Enabled && !cond {
		panic(fmt.Sprintf("invariant violated: "+format, args...))
	}
}
