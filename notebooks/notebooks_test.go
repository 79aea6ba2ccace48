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
)

// FigureTag marks a code cell that must display an image/png.
const FigureTag = "figure"

// notebookTimeout bounds one notebook's execution (the whole suite takes a few
// minutes at CI size on two cores with a warm build cache).
const notebookTimeout = 10 * time.Minute

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

// TestNotebooks executes every notebook of this directory at CI size
// (GRADCSCG_NB_SIZE=ci) with fresh run directories, and checks the outputs
// (checkExecuted). With GRADCSCG_NB_OUT=DIR the executed notebooks (and the runs they
// trained, in DIR/runs) are kept in DIR
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

	out := os.Getenv("GRADCSCG_NB_OUT")
	if out == "" {
		out = t.TempDir()
	} else if out, err = filepath.Abs(out); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()                     // CI-sized runs are trained afresh, never loaded from runs/
	if os.Getenv("GRADCSCG_NB_OUT") != "" { // kept beside the executed notebooks (afresh too)
		runs = filepath.Join(out, "runs")
		if err := os.RemoveAll(runs); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(runs, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GRADCSCG_NB_SIZE=ci", "GRADCSCG_RUNS_DIR="+runs)
	chromium := ""
	if os.Getenv("GRADCSCG_NB_OUT") != "" {
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
			ctx, cancel := context.WithTimeout(context.Background(), notebookTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, jupyter, "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
				"--ExecutePreprocessor.timeout=600", "--ExecutePreprocessor.kernel_name=gonb",
				"--output-dir", out, "--output", nb, nb)
			cmd.Env = env
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
			for _, p := range problems {
				t.Errorf("%s: %s", nb, p)
			}
			t.Logf("%s executed in %.1fs", nb, time.Since(start).Seconds())
			if os.Getenv("GRADCSCG_NB_OUT") == "" {
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
