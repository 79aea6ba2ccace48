package tabulate_test

import (
	"fmt"

	"github.com/gradcscg/gradcscg/pkg/tabulate"
)

// A table of the committed reports of the symbolic suite on aliased: one row per
// pattern, EM's three seeds and the gradient trainer's ten averaged (a mean of counts
// keeps one decimal). The arguments are those of `gradcscg tabulate` run in results/.
func ExampleReader_Table() {
	spec, err := tabulate.ParseArgs([]string{"--rows", "mean", "--columns", "label,runs,states,f1,purity",
		"em=symbolic/aliased_em_seed*.json", "gradient=symbolic/aliased_gradient_seed*.json"})
	if err != nil {
		fmt.Println(err)
		return
	}
	table, err := tabulate.NewReader("../../results").Table(spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(table)
	// Output:
	// | run | runs | states | map F1 | state→place purity |
	// |---|---|---|---|---|
	// | em | 3 | 17.0 | 1.000 | 1.000 |
	// | gradient | 10 | 17.0 | 1.000 | 1.000 |
}
