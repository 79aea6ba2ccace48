// Package progress reports the advance of long computations: periodic lines
// with the current step, rate and estimated time to completion, or a single
// self-updating line when the output is a terminal.
//
//	bar := progress.New(os.Stderr, "train", 3000)
//	for i := range 3000 {
//		...
//		bar.Update(i+1, "ll/step %.4f", ll)
//	}
//	bar.Done()
package progress
