// Package ipynb normalises Jupyter notebook files (nbformat 4) for committing them
// with their outputs, so that executing a notebook again at the same size changes the
// file only where an output changed.
//
// Clean keeps what a reader sees — sources, cell tags, text, tables, images, errors —
// and drops or fixes what changes from one execution or one machine to the next:
//
//   - the notebook's metadata is reduced to kernelspec and language_info, without
//     the language's version;
//   - a cell's metadata is reduced to tags, jupyter (hidden input or output),
//     editable and deletable: execution timings, scroll and collapse state go;
//   - every cell gets an id (its own, or "cNN" from its position when it has none or
//     a duplicate) and nbformat_minor is at least 5;
//   - executed code cells are numbered 1, 2, … in order (execute_result outputs
//     carry their cell's number); cells not executed have none;
//   - consecutive stream outputs of one stream are merged; display outputs marked
//     transient (metadata ProgressKey: ProgressValue, the notebooks' live progress
//     blocks) and empty ones are dropped, as is every output's "transient";
//   - in outputs, Options.Root (the repository's absolute path) is written relative
//     to it, and GoNB's per-kernel temporary directory as $GONB_TMP_DIR;
//   - the JSON is written as nbformat writes it (keys sorted, one-space indent,
//     multi-line strings as lists of lines, a final newline), without HTML escapes.
//
// Clean is idempotent: Clean of its own output returns the same bytes.
package ipynb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The metadata that marks a display output as transient (a live progress block):
// Clean drops it.
const (
	ProgressKey   = "gradcscg"
	ProgressValue = "progress"
)

// Options are Clean's settings.
type Options struct {
	// Root is an absolute directory whose path is written relative to it in outputs:
	// Root followed by "/" is removed and Root alone becomes ".". "" leaves paths as
	// they are.
	Root string
}

// keptCellMetadata are the cell metadata keys Clean keeps.
var keptCellMetadata = []string{"tags", "jupyter", "editable", "deletable"}

// gonbTmp matches GoNB's per-kernel temporary directory (/tmp/gonb_<8 hex digits>).
var gonbTmp = regexp.MustCompile(`/tmp/gonb_[0-9a-f]{8}\b`)

// Clean returns the notebook raw normalised as the package documentation says, or an
// error naming what makes raw not an nbformat 4 notebook.
func Clean(raw []byte, opt Options) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var nb map[string]any
	if err := dec.Decode(&nb); err != nil {
		return nil, fmt.Errorf("ipynb: not a JSON notebook: %w", err)
	}
	if v, ok := nb["nbformat"].(json.Number); !ok || v.String() != "4" {
		return nil, fmt.Errorf("ipynb: nbformat %v: want 4", nb["nbformat"])
	}
	cells, ok := nb["cells"].([]any)
	if !ok {
		return nil, fmt.Errorf("ipynb: no list of cells")
	}
	c := cleaner{opt: opt}
	out := map[string]any{"nbformat": json.Number("4"), "nbformat_minor": json.Number("5")}
	if v, ok := nb["nbformat_minor"].(json.Number); ok {
		if n, err := v.Int64(); err == nil && n > 5 {
			out["nbformat_minor"] = v
		}
	}
	out["metadata"] = notebookMetadata(nb["metadata"])
	ids := map[string]bool{}
	var kept []any
	for i, x := range cells {
		cell, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ipynb: cell %d is not an object", i+1)
		}
		cc, err := c.cell(cell, i)
		if err != nil {
			return nil, fmt.Errorf("ipynb: cell %d: %w", i+1, err)
		}
		id, _ := cc["id"].(string)
		if id == "" || ids[id] {
			id = fmt.Sprintf("c%02d", i)
			for n := 2; ids[id]; n++ {
				id = fmt.Sprintf("c%02d-%d", i, n)
			}
		}
		ids[id] = true
		cc["id"] = id
		kept = append(kept, cc)
	}
	out["cells"] = kept
	if kept == nil {
		out["cells"] = []any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("ipynb: %w", err)
	}
	return buf.Bytes(), nil
}

// notebookMetadata keeps kernelspec and language_info (without its version).
func notebookMetadata(x any) map[string]any {
	md := map[string]any{}
	in, _ := x.(map[string]any)
	if ks, ok := in["kernelspec"]; ok {
		md["kernelspec"] = ks
	}
	if li, ok := in["language_info"].(map[string]any); ok {
		l := map[string]any{}
		for k, v := range li {
			if k != "version" {
				l[k] = v
			}
		}
		md["language_info"] = l
	}
	return md
}

// cleaner holds Clean's options and the execution count of the last executed cell.
type cleaner struct {
	opt   Options
	count int
}

// cell returns the normalised copy of a cell (index i, counting from 0).
func (c *cleaner) cell(cell map[string]any, i int) (map[string]any, error) {
	typ, _ := cell["cell_type"].(string)
	out := map[string]any{"cell_type": typ, "source": lines(text(cell["source"]))}
	if id, ok := cell["id"].(string); ok {
		out["id"] = id
	}
	md := map[string]any{}
	if in, ok := cell["metadata"].(map[string]any); ok {
		for _, k := range keptCellMetadata {
			if v, ok := in[k]; ok {
				if l, isList := v.([]any); isList && len(l) == 0 {
					continue
				}
				md[k] = v
			}
		}
	}
	out["metadata"] = md
	switch typ {
	case "code":
		outputs, _ := cell["outputs"].([]any)
		executed := cell["execution_count"] != nil || len(outputs) > 0
		var count any
		if executed {
			c.count++
			count = json.Number(fmt.Sprint(c.count))
		}
		out["execution_count"] = count
		cleaned, err := c.outputs(outputs, count)
		if err != nil {
			return nil, err
		}
		out["outputs"] = cleaned
	case "markdown", "raw":
		if a, ok := cell["attachments"]; ok {
			out["attachments"] = a
		}
	default:
		return nil, fmt.Errorf("cell_type %q: want code, markdown or raw", typ)
	}
	return out, nil
}

// outputs returns a code cell's outputs normalised (count: the cell's number).
func (c *cleaner) outputs(outputs []any, count any) ([]any, error) {
	kept := []any{}
	for j, x := range outputs {
		o, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("output %d is not an object", j+1)
		}
		typ, _ := o["output_type"].(string)
		switch typ {
		case "stream":
			name, _ := o["name"].(string)
			t := c.paths(text(o["text"]))
			if n := len(kept); n > 0 {
				if prev := kept[n-1].(map[string]any); prev["output_type"] == "stream" && prev["name"] == name {
					prev["text"] = lines(text(prev["text"]) + t)
					continue
				}
			}
			kept = append(kept, map[string]any{"output_type": typ, "name": name, "text": lines(t)})
		case "display_data", "execute_result":
			md, _ := o["metadata"].(map[string]any)
			if md == nil {
				md = map[string]any{}
			}
			if md[ProgressKey] == ProgressValue {
				continue
			}
			data := map[string]any{}
			in, _ := o["data"].(map[string]any)
			for mime, v := range in {
				switch {
				case strings.HasSuffix(mime, "json"): // JSON data (application/json, widgets): as it is
					data[mime] = v
				case base64Image(mime):
					if s := strings.TrimSpace(text(v)); s != "" {
						data[mime] = s
					}
				default: // text/*, image/svg+xml
					if s := text(v); s != "" {
						data[mime] = lines(c.paths(s))
					}
				}
			}
			if len(data) == 0 {
				continue
			}
			no := map[string]any{"output_type": typ, "data": data, "metadata": md}
			if typ == "execute_result" {
				no["execution_count"] = count
			}
			kept = append(kept, no)
		case "error":
			var tb []any
			if l, ok := o["traceback"].([]any); ok {
				for _, s := range l {
					tb = append(tb, c.paths(text(s)))
				}
			}
			if tb == nil {
				tb = []any{}
			}
			kept = append(kept, map[string]any{"output_type": typ, "ename": text(o["ename"]),
				"evalue": c.paths(text(o["evalue"])), "traceback": tb})
		default:
			return nil, fmt.Errorf("output %d: output_type %q", j+1, typ)
		}
	}
	return kept, nil
}

// paths writes Options.Root relative to it and GoNB's temporary directory as
// $GONB_TMP_DIR.
func (c *cleaner) paths(s string) string {
	if r := strings.TrimRight(c.opt.Root, "/"); r != "" {
		s = strings.ReplaceAll(s, r+"/", "")
		s = strings.ReplaceAll(s, r, ".")
	}
	return gonbTmp.ReplaceAllString(s, "$$GONB_TMP_DIR")
}

// base64Image reports whether mime is an image nbformat stores as base64 text.
func base64Image(mime string) bool {
	return strings.HasPrefix(mime, "image/") && mime != "image/svg+xml"
}

// text is nbformat's multi-line string (a string or a list of strings) joined; other
// values give "".
func text(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case []any:
		var sb strings.Builder
		for _, p := range v {
			s, _ := p.(string)
			sb.WriteString(s)
		}
		return sb.String()
	}
	return ""
}

// lines splits s after every newline, as nbformat writes multi-line strings.
func lines(s string) []any {
	out := []any{}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
