//go:build study

package pipeline

import "testing"

// finishedRun loads the finished run directory dir for a study: the run, its data, and
// the hard token of every training frame under its encoder.
func finishedRun(t *testing.T, dir string) (*Result, *data, []int) {
	t.Helper()
	res, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := loadData(res.Config)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := d.encodeAll(res.VQVAE)
	if err != nil {
		t.Fatal(err)
	}
	return res, d, tokens
}
