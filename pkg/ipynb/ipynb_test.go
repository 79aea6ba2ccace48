package ipynb

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// executed is a notebook as nbconvert writes it after executing it in root at time
// stamp: kernel metadata, timings, execution counts, a live progress block with its
// timings, streams split into pieces, absolute paths, a cell without an id.
func executed(root, stamp, count, progress string, splitStream bool) string {
	stream := `{"name":"stdout","output_type":"stream","text":["loaded ` + root + `/runs/x\n","ok\n"]}`
	if splitStream {
		stream = `{"name":"stdout","output_type":"stream","text":"loaded ` + root + `/runs/x\n"},
		          {"name":"stdout","output_type":"stream","text":["ok\n"]}`
	}
	return `{
 "cells": [
  {"cell_type":"markdown","id":"c00","metadata":{"collapsed":false},"source":["# Title\n","text"]},
  {"cell_type":"code","execution_count":` + count + `,"id":"c01",
   "metadata":{"execution":{"iopub.execute_input":"` + stamp + `"},"scrolled":true,"tags":["figure"]},
   "outputs":[
    {"data":{"text/html":["<pre>` + progress + `</pre>"]},"metadata":{"gradcscg":"progress"},"output_type":"display_data","transient":{"display_id":"` + stamp + `"}},
    ` + stream + `,
    {"data":{"image/png":"iVBORw0KGgo=\n","text/plain":["<Figure>"]},"metadata":{"width":600},"output_type":"display_data"},
    {"data":{"text/html":""},"metadata":{},"output_type":"display_data"},
    {"name":"stderr","output_type":"stream","text":"error: ` + root + `/runs/x: bad & <worse>\n"}
   ],
   "source":"%%\nx := 1\n"},
  {"cell_type":"code","execution_count":null,"metadata":{"tags":[]},"outputs":[],"source":[]},
  {"cell_type":"code","execution_count":` + count + `1,"id":"c01","metadata":{},
   "outputs":[{"data":{"text/plain":"2"},"execution_count":` + count + `1,"metadata":{},"output_type":"execute_result"},
              {"ename":"ERROR","evalue":"failed in /tmp/gonb_0123abcd/main.go","output_type":"error","traceback":["at ` + root + `/x.go"]}],
   "source":"y"}
 ],
 "metadata":{"kernelspec":{"display_name":"Go (gonb)","language":"go","name":"gonb"},
   "language_info":{"name":"go","version":"go1.27.` + count + `"},"widgets":{"state":"` + stamp + `"}},
 "nbformat": 4,
 "nbformat_minor": 4
}`
}

// want is Clean(executed(root, ...), Options{Root: root}), written by hand.
const want = `{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "c00",
   "metadata": {},
   "source": [
    "# Title\n",
    "text"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "c01",
   "metadata": {
    "tags": [
     "figure"
    ]
   },
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "loaded runs/x\n",
      "ok\n"
     ]
    },
    {
     "data": {
      "image/png": "iVBORw0KGgo=",
      "text/plain": [
       "<Figure>"
      ]
     },
     "metadata": {
      "width": 600
     },
     "output_type": "display_data"
    },
    {
     "name": "stderr",
     "output_type": "stream",
     "text": [
      "error: runs/x: bad & <worse>\n"
     ]
    }
   ],
   "source": [
    "%%\n",
    "x := 1\n"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "c02",
   "metadata": {},
   "outputs": [],
   "source": []
  },
  {
   "cell_type": "code",
   "execution_count": 2,
   "id": "c03",
   "metadata": {},
   "outputs": [
    {
     "data": {
      "text/plain": [
       "2"
      ]
     },
     "execution_count": 2,
     "metadata": {},
     "output_type": "execute_result"
    },
    {
     "ename": "ERROR",
     "evalue": "failed in $GONB_TMP_DIR/main.go",
     "output_type": "error",
     "traceback": [
      "at x.go"
     ]
    }
   ],
   "source": [
    "y"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Go (gonb)",
   "language": "go",
   "name": "gonb"
  },
  "language_info": {
   "name": "go"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
`

// TestClean: an executed notebook gives the hand-written normal form; a second
// execution that differs only in timings, counts, the checkout's path, the progress
// block, kernel metadata and how streams were split gives the same bytes; Clean is
// idempotent; a changed image or text is kept.
func TestClean(t *testing.T) {
	a := executed("/home/a/gradcscg", "2026-01-01T00:00:00Z", "3", "joint 300/300 | 9.7/s in 30.8s", false)
	b := executed("/srv/ci/checkout", "2027-05-05T12:34:56Z", "7", "joint 300/300 | 3.1/s in 1m36s", true)
	ca, err := Clean([]byte(a), Options{Root: "/home/a/gradcscg"})
	if err != nil {
		t.Fatal(err)
	}
	if string(ca) != want {
		t.Errorf("Clean gave\n%s\nwant\n%s", ca, want)
	}
	cb, err := Clean([]byte(b), Options{Root: "/srv/ci/checkout/"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca, cb) {
		t.Errorf("two executions differing only in what Clean drops differ after it:\n%s\n---\n%s", ca, cb)
	}
	again, err := Clean(ca, Options{Root: "/home/a/gradcscg"})
	if err != nil || !bytes.Equal(again, ca) {
		t.Errorf("Clean is not idempotent (%v):\n%s", err, again)
	}
	for _, change := range [][2]string{{"iVBORw0KGgo=", "iVBORw0KGgp="}, {"ok\\n", "ok, 2\\n"}} {
		c, err := Clean([]byte(strings.Replace(a, change[0], change[1], 1)), Options{Root: "/home/a/gradcscg"})
		if err != nil || bytes.Equal(c, ca) {
			t.Errorf("changing %q to %q: the cleaned notebook did not change (%v)", change[0], change[1], err)
		}
	}
}

// TestCleanRepositoryNotebooks: Clean is idempotent on every notebook of the
// repository.
func TestCleanRepositoryNotebooks(t *testing.T) {
	paths, err := filepath.Glob("../../notebooks/*.ipynb")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no notebooks (%v)", err)
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		once, err := Clean(raw, Options{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		twice, err := Clean(once, Options{})
		if err != nil || !bytes.Equal(once, twice) {
			t.Errorf("%s: Clean is not idempotent (%v)", p, err)
		}
	}
}

func TestCleanErrors(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"not json", "not a JSON notebook"},
		{`{"nbformat": 3, "cells": []}`, "nbformat 3: want 4"},
		{`{"nbformat": 4}`, "no list of cells"},
		{`{"nbformat": 4, "cells": [1]}`, "cell 1 is not an object"},
		{`{"nbformat": 4, "cells": [{"cell_type": "heading"}]}`, `cell 1: cell_type "heading"`},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "outputs": [{"output_type": "pager"}]}]}`, `output 1: output_type "pager"`},
	} {
		if _, err := Clean([]byte(tc.raw), Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Clean(%s) = %v, want an error containing %q", tc.raw, err, tc.want)
		}
	}
}
