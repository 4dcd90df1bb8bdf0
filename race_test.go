//go:build race

package cosla_test

// raceEnabled: the tests run under the race detector (go test -race).
const raceEnabled = true
