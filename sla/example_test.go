package sla_test

import (
	"fmt"

	"github.com/cosla/cosla/sla"
)

func ExampleParse() {
	cart, err := sla.Parse(`
		# The shopping cart SLA of Pileus Fig. 4.
		read-my-writes 300ms 1.0
		eventual       300ms 0.5
	`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, sub := range cart {
		fmt.Printf("%d. %s within %s is worth %g\n", i+1, sub.Consistency, sub.Latency, sub.Utility)
	}
	fmt.Println(cart)

	_, err = sla.Parse("strong 150ms 1; eventual 30 0.5")
	fmt.Println(err)
	// Output:
	// 1. read-my-writes within 300ms is worth 1
	// 2. eventual within 300ms is worth 0.5
	// read-my-writes 300ms 1; eventual 300ms 0.5
	// subSLA 2: latency: cosla: invalid SLA: "30" is not a duration (write e.g. 300ms or 1s)
}
