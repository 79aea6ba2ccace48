package notebooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/ipynb"
)

// FigureTag marks a code cell that must display an image/png.
const FigureTag = "figure"

// notebookTimeout bounds one notebook's execution at CI size, with room for a machine
// busy with other work; fullNotebookTimeout at full size,
// where a missing run is trained (hours on two cores). nbconvertWaitDelay bounds the
// wait for nbconvert's output once it has exited or been killed: a kernel it leaves
// running holds the output pipe open.
const (
	notebookTimeout     = 20 * time.Minute
	fullNotebookTimeout = 24 * time.Hour
	nbconvertWaitDelay  = time.Minute
)

// cell is the part of an .ipynb cell the checks read.
type cell struct {
	CellType string          `json:"cell_type"`
	Source   json.RawMessage `json:"source"` // a string or a list of strings
	Metadata struct {
		Tags []string `json:"tags"`
	} `json:"metadata"`
	Outputs []output `json:"outputs"`
}

type output struct {
	OutputType string                     `json:"output_type"`
	Metadata   map[string]json.RawMessage `json:"metadata"`
	Name       string                     `json:"name"` // stream: stdout or stderr
	Text       json.RawMessage            `json:"text"`
	Data       map[string]json.RawMessage `json:"data"`
	EName      string                     `json:"ename"`
	EValue     string                     `json:"evalue"`
}

// multiline decodes nbformat's "multiline string": a string or a list of strings.
func multiline(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []string
	if json.Unmarshal(raw, &parts) == nil {
		return strings.Join(parts, "")
	}
	return string(raw)
}

// exitStatus matches the line GoNB prints when a cell's program (or a "!" shell
// line) exits with a non-zero status; Jupyter does not report those as errors.
var exitStatus = regexp.MustCompile(`(?m)^exit status [1-9][0-9]*\s*$`)

// checkExecuted returns the problems of an executed notebook: "error" outputs (GoNB
// reports compile errors so), stderr streams with a non-zero "exit status N" (a
// panic, notebook.Check, a failing shell line), code cells that were not executed,
// and cells tagged "figure" without an image/png output.
func checkExecuted(raw []byte) ([]string, error) {
	var nb struct {
		Cells []cell `json:"cells"`
	}
	if err := json.Unmarshal(raw, &nb); err != nil {
		return nil, fmt.Errorf("executed notebook is not JSON: %w", err)
	}
	var problems []string
	code := 0
	for i, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		code++
		where := fmt.Sprintf("cell %d (code cell %d, %q)", i+1, code, firstLine(multiline(c.Source)))
		hasPNG := false
		for _, o := range c.Outputs {
			switch o.OutputType {
			case "error":
				problems = append(problems, fmt.Sprintf("%s: error %s: %s", where, o.EName, o.EValue))
			case "stream":
				if text := multiline(o.Text); o.Name == "stderr" && exitStatus.MatchString(text) {
					problems = append(problems, fmt.Sprintf("%s: failed:\n%s", where, tail(text, 1500)))
				}
			}
			if _, ok := o.Data["image/png"]; ok {
				hasPNG = true
			}
		}
		if slices.Contains(c.Metadata.Tags, FigureTag) && !hasPNG {
			problems = append(problems, fmt.Sprintf("%s: tagged %q but displayed no image/png", where, FigureTag))
		}
	}
	if code == 0 {
		problems = append(problems, "no code cells")
	}
	return problems, nil
}

// logLine matches a line of raw log output in a notebook's output: a progress bar's
// line ("name 12/300 ( 4%)"), a log package timestamp, a klog header, a Go panic.
var logLine = regexp.MustCompile(`(?m)^(\S.* \d+/\d+ \(\s*\d+%\)|\d{4}/\d\d/\d\d \d\d:\d\d:\d\d |[IWEF]\d{4} \d\d:\d\d:\d\d|panic: |goroutine \d+ \[)`)

// dataURI matches an embedded image (whose base64 may hold any characters).
var dataURI = regexp.MustCompile(`data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+`)

// checkOutputs returns what makes an executed notebook's outputs noisy or
// machine-bound: any stderr output (errors are reported by checkExecuted; anything
// else is a raw log), raw log lines (logLine) in any text output, and any of the
// forbidden strings (absolute paths: the checkout, the runs root, the home directory)
// in any text output. Outputs marked as transient progress blocks are not committed
// and are not checked for log lines.
func checkOutputs(raw []byte, forbidden []string) ([]string, error) {
	var nb struct {
		Cells []cell `json:"cells"`
	}
	if err := json.Unmarshal(raw, &nb); err != nil {
		return nil, fmt.Errorf("executed notebook is not JSON: %w", err)
	}
	var problems []string
	code := 0
	for i, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		code++
		where := fmt.Sprintf("cell %d (code cell %d, %q)", i+1, code, firstLine(multiline(c.Source)))
		for _, o := range c.Outputs {
			var texts []string
			progress := string(o.Metadata[ipynb.ProgressKey]) == `"`+ipynb.ProgressValue+`"`
			switch o.OutputType {
			case "stream":
				text := multiline(o.Text)
				if o.Name == "stderr" && !exitStatus.MatchString(text) && !strings.HasPrefix(text, "error: ") {
					problems = append(problems, fmt.Sprintf("%s: output on stderr:\n%s", where, tail(text, 500)))
				}
				texts = append(texts, text)
			case "error":
				texts = append(texts, o.EValue)
			}
			for mime, v := range o.Data {
				if strings.HasPrefix(mime, "text/") {
					texts = append(texts, dataURI.ReplaceAllString(multiline(v), "data:…"))
				}
			}
			for _, text := range texts {
				if m := logLine.FindString(text); m != "" && !progress {
					problems = append(problems, fmt.Sprintf("%s: raw log line %q", where, firstLine(m)))
				}
				for _, f := range forbidden {
					if j := strings.Index(text, f); j >= 0 {
						problems = append(problems, fmt.Sprintf("%s: absolute path %q in %q", where, f, firstLine(text[j:])))
					}
				}
			}
		}
	}
	return problems, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// kernelInstalled reports whether Jupyter knows a kernel called gonb.
func kernelInstalled(jupyter string) (bool, error) {
	out, err := exec.Command(jupyter, "kernelspec", "list", "--json").Output()
	if err != nil {
		return false, err
	}
	var specs struct {
		Kernelspecs map[string]json.RawMessage `json:"kernelspecs"`
	}
	if err := json.Unmarshal(out, &specs); err != nil {
		return false, fmt.Errorf("jupyter kernelspec list --json: %w", err)
	}
	_, ok := specs.Kernelspecs["gonb"]
	return ok, nil
}

// Variables of TestNotebooks.
const (
	outEnv   = "GRADCSCG_NB_OUT"   // keep the executed notebooks, HTML and screenshots in this folder
	fullEnv  = "GRADCSCG_NB_FULL"  // "1": execute at full size (make notebooks-full)
	writeEnv = "GRADCSCG_NB_WRITE" // "1" at full size: write the executed notebooks back (make notebooks-full)
	sizeEnv  = "GRADCSCG_NB_SIZE"  // the notebooks' size (pkg/notebook), set for each execution
)

// TestNotebooks executes every notebook of this directory and checks the outputs
// (checkExecuted, checkOutputs). At CI size (the default) the runs are trained afresh
// in a temporary runs root. At full size (GRADCSCG_NB_FULL=1, `make notebooks-full`) the notebooks use the repository's runs/ and results/runs/
// (shipped runs load, missing runs train), without a time limit; with
// GRADCSCG_NB_WRITE=1 each notebook whose execution passes the checks is written back
// over its source, normalised by ipynb.Clean. With GRADCSCG_NB_OUT=DIR the executed
// notebooks (and, at CI size, the runs they trained, in DIR/runs) are kept in DIR
// with HTML exports and, when chromium is installed, PNG screenshots of them.
func TestNotebooks(t *testing.T) {
	jupyter, err := exec.LookPath("jupyter")
	if err != nil {
		t.Skip("jupyter not found: scripts/setup.sh installs Jupyter and the GoNB kernel")
	}
	if ok, err := kernelInstalled(jupyter); err != nil {
		t.Skipf("jupyter kernelspec list failed (%v): scripts/setup.sh installs Jupyter and the GoNB kernel", err)
	} else if !ok {
		t.Skip("the gonb Jupyter kernel is not installed: run scripts/setup.sh")
	}
	notebooks, err := filepath.Glob("*.ipynb")
	if err != nil || len(notebooks) == 0 {
		t.Fatalf("no notebooks in %s (%v)", must(os.Getwd()), err)
	}
	slices.Sort(notebooks)

	full := os.Getenv(fullEnv) == "1"
	write := os.Getenv(writeEnv) == "1"
	if write && !full {
		t.Fatalf("%s=1 writes the notebooks back at full size only (set %s=1)", writeEnv, fullEnv)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv(outEnv)
	if out == "" {
		out = t.TempDir()
	} else if out, err = filepath.Abs(out); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), sizeEnv+"=full")
	timeout, cellTimeout := notebookTimeout, "600"
	forbidden := []string{root}
	if full {
		timeout, cellTimeout = fullNotebookTimeout, "-1"
	} else {
		runs := t.TempDir()          // CI-sized runs are trained afresh, never loaded from runs/
		if os.Getenv(outEnv) != "" { // kept beside the executed notebooks (afresh too)
			runs = filepath.Join(out, "runs")
			if err := os.RemoveAll(runs); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(runs, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		env = append(os.Environ(), sizeEnv+"=ci", "GRADCSCG_RUNS_DIR="+runs)
		forbidden = append(forbidden, runs)
	}
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		forbidden = append(forbidden, home+"/")
	}
	chromium := ""
	if os.Getenv(outEnv) != "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				chromium = p
				break
			}
		}
	}

	for _, nb := range notebooks {
		name := strings.TrimSuffix(nb, ".ipynb")
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, jupyter, "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
				"--ExecutePreprocessor.timeout="+cellTimeout, "--ExecutePreprocessor.kernel_name=gonb",
				"--output-dir", out, "--output", nb, nb)
			cmd.Env = env
			cmd.WaitDelay = nbconvertWaitDelay
			var log bytes.Buffer
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Run(); err != nil {
				t.Fatalf("jupyter nbconvert --execute %s: %v\n%s", nb, err, tail(log.String(), 4000))
			}
			raw, err := os.ReadFile(filepath.Join(out, nb))
			if err != nil {
				t.Fatal(err)
			}
			problems, err := checkExecuted(raw)
			if err != nil {
				t.Fatal(err)
			}
			more, err := checkOutputs(raw, forbidden)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range append(problems, more...) {
				t.Errorf("%s: %s", nb, p)
			}
			t.Logf("%s executed in %.1fs", nb, time.Since(start).Seconds())
			if write && !t.Failed() {
				clean, err := ipynb.Clean(raw, ipynb.Options{Root: root})
				if err != nil {
					t.Fatal(err)
				}
				if err := atomicfile.WriteFile(nb, clean); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s with its outputs (%d bytes, %d images)", nb, len(clean), bytes.Count(clean, []byte(`"image/png"`)))
			}
			if os.Getenv(outEnv) == "" {
				return
			}
			html := filepath.Join(out, name+".html")
			if b, err := exec.Command(jupyter, "nbconvert", "--to", "html", "--output-dir", out,
				filepath.Join(out, nb)).CombinedOutput(); err != nil {
				t.Errorf("jupyter nbconvert --to html: %v\n%s", err, tail(string(b), 2000))
				return
			}
			if chromium == "" {
				return
			}
			shot := filepath.Join(out, name+".png")
			if b, err := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu",
				"--disable-background-networking", "--hide-scrollbars", "--screenshot="+shot,
				"--window-size=1100,"+fmt.Sprint(screenHeight(raw)), "file://"+html).CombinedOutput(); err != nil {
				t.Logf("chromium screenshot of %s failed (not a test failure): %v\n%s", html, err, tail(string(b), 1000))
			}
		})
	}
}

// screenHeight guesses a window height (pixels) that shows the whole exported
// notebook: text lines plus every PNG at its size (scaled to the page width).
func screenHeight(raw []byte) int {
	var nb struct {
		Cells []cell `json:"cells"`
	}
	if json.Unmarshal(raw, &nb) != nil {
		return 8000
	}
	lines := func(s string) int { return 1 + strings.Count(s, "\n") }
	h := 300
	for _, c := range nb.Cells {
		h += 40 + 22*lines(multiline(c.Source))
		for _, o := range c.Outputs {
			h += 22 * lines(multiline(o.Text))
			h += 40 * lines(multiline(o.Data["text/markdown"]))
			if b64, ok := o.Data["image/png"]; ok {
				h += 40 + pngHeight(multiline(b64), 1000)
			}
		}
	}
	return min(h, 30000)
}

// pngHeight returns the displayed height of a base64 PNG at most maxWidth wide.
func pngHeight(b64 string, maxWidth int) int {
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(b64, "\n", ""))
	if err != nil {
		return 600
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width == 0 {
		return 600
	}
	return cfg.Height * min(cfg.Width, maxWidth) / cfg.Width
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCheckExecuted(t *testing.T) {
	code := func(tags []string, outputs ...string) string {
		tj, _ := json.Marshal(tags)
		return fmt.Sprintf(`{"cell_type":"code","source":["%%%%\n","x()"],"metadata":{"tags":%s},"outputs":[%s]}`,
			tj, strings.Join(outputs, ","))
	}
	const (
		stdout = `{"output_type":"stream","name":"stdout","text":["16\n"]}`
		png    = `{"output_type":"display_data","data":{"image/png":"iVBOR"},"metadata":{}}`
		md     = `{"output_type":"display_data","data":{"text/markdown":"**x**"},"metadata":{}}`
		failed = `{"output_type":"stream","name":"stderr","text":["panic: boom\n","exit status 2\n"]}`
		ok0    = `{"output_type":"stream","name":"stderr","text":"progress 10/10\nexit status 0 is fine\n"}`
		errOut = `{"output_type":"error","ename":"ERROR","evalue":"failed to run go build","traceback":[]}`
		mdCell = `{"cell_type":"markdown","source":"# T","metadata":{}}`
	)
	nb := func(cells ...string) []byte {
		return []byte(`{"cells":[` + strings.Join(cells, ",") + `],"nbformat":4,"nbformat_minor":5}`)
	}
	for _, tc := range []struct {
		name string
		nb   []byte
		want []string // substrings, one per expected problem
	}{
		{"clean", nb(mdCell, code(nil, stdout, md), code([]string{"figure"}, png), code(nil, ok0)), nil},
		{"compile error", nb(code(nil, errOut)), []string{"error ERROR: failed to run go build"}},
		{"panic", nb(code(nil, stdout, failed)), []string{"failed:\npanic: boom"}},
		{"missing figure", nb(code([]string{"figure"}, md)), []string{`tagged "figure" but displayed no image/png`}},
		{"two cells", nb(code([]string{"figure"}, failed), code(nil, errOut)),
			[]string{"exit status 2", "displayed no image/png", "failed to run go build"}},
		{"no code", nb(mdCell), []string{"no code cells"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkExecuted(tc.nb)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if len(got) != len(want) {
				t.Fatalf("problems %q, want %d matching %q", got, len(want), want)
			}
			for i := range want {
				if !strings.Contains(got[i], want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], want[i])
				}
			}
		})
	}
	if _, err := checkExecuted([]byte("not json")); err == nil {
		t.Error("checkExecuted(not JSON) returned no error")
	}
}

func TestCheckOutputs(t *testing.T) {
	code := func(outputs ...string) string {
		return `{"cell_type":"code","source":"%%\nx()","metadata":{},"outputs":[` + strings.Join(outputs, ",") + `]}`
	}
	nb := func(cells ...string) []byte { return []byte(`{"cells":[` + strings.Join(cells, ",") + `]}`) }
	const (
		table    = `{"output_type":"display_data","data":{"text/markdown":["| a | b |\n","| --- | --- |\n"]},"metadata":{}}`
		progress = `{"output_type":"display_data","data":{"text/html":"<pre>joint 3/300 (  1%) | 9.7/s ETA 30s</pre>"},"metadata":{"gradcscg":"progress"}}`
		logged   = `{"output_type":"stream","name":"stdout","text":["aliased: loaded\n","joint 3/300 (  1%) | 9.7/s ETA 30s\n"]}`
		stderr   = `{"output_type":"stream","name":"stderr","text":"I1206 16:49:21.000 gomlx.go:12] backend\n"}`
		failed   = `{"output_type":"stream","name":"stderr","text":["error: boom\n","exit status 1\n"]}`
		abs      = `{"output_type":"display_data","data":{"text/markdown":"Table written to ` + "`/home/u/gradcscg/results/t.md`" + `"},"metadata":{}}`
		image    = `{"output_type":"display_data","data":{"text/html":"<img src=\"data:image/png;base64,AB/home/u/gradcscg/CD==\">"},"metadata":{}}`
	)
	for _, tc := range []struct {
		name string
		nb   []byte
		want []string
	}{
		{"clean", nb(code(table, progress, failed, image)), nil},
		{"log lines", nb(code(logged)), []string{`raw log line "joint 3/300`}},
		{"stderr", nb(code(stderr)), []string{"output on stderr", `raw log line "I1206`}},
		{"absolute path", nb(code(abs)), []string{`absolute path "/home/u/gradcscg" in "/home/u/gradcscg/results/t.md`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkOutputs(tc.nb, []string{"/home/u/gradcscg"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i := range tc.want {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestCommittedNotebooksClean: every notebook is committed as ipynb.Clean writes it
// (what `make notebooks-full` writes), so that a notebook saved from the Notebook UI —
// timings, kernel metadata, new execution counts — is caught before it is committed.
func TestCommittedNotebooksClean(t *testing.T) {
	paths, err := filepath.Glob("*.ipynb")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no notebooks (%v)", err)
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		clean, err := ipynb.Clean(raw, ipynb.Options{})
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if !bytes.Equal(clean, raw) {
			t.Errorf("%s is not in its committed form (saved from the Notebook UI?): run bin/gradcscg nbclean notebooks/%s", p, p)
		}
	}
}
