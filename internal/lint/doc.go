// Package lint holds repository rules written as Go tests.
package lint
