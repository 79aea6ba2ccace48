package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot writes files (path under the root → content) into a new directory.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestMemoryLimitCgroup: the memory a process may use is the smaller of MemTotal and
// its cgroup's limit, the tightest on the cgroup's path, for v2 and v1, inside a
// cgroup namespace too; "max" and v1's "unlimited" are no limit.
func TestMemoryLimitCgroup(t *testing.T) {
	const gib = 1 << 30
	meminfo := "MemTotal:       16777216 kB\nMemFree:         1000 kB\n" // 16 GiB
	for _, c := range []struct {
		name  string
		files map[string]string
		want  float64
	}{
		{"no cgroup", map[string]string{"proc/meminfo": meminfo}, 16 * gib},
		{"v2 limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/user.slice/app\n",
			"sys/fs/cgroup/user.slice/app/memory.max": "1073741824\n", "sys/fs/cgroup/user.slice/memory.max": "max\n"}, 1 * gib},
		{"v2 limit on an ancestor", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "max\n", "sys/fs/cgroup/a/memory.max": "2147483648\n"}, 2 * gib},
		{"v2 max", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/a\n", "sys/fs/cgroup/a/memory.max": "max\n"}, 16 * gib},
		{"v2 in a namespace", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "536870912\n"}, 0.5 * gib},
		{"v2 hybrid mount", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/x\n",
			"sys/fs/cgroup/unified/x/memory.max": "1073741824\n"}, 1 * gib},
		{"v1 limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "5:cpu:/\n4:memory:/docker/abc\n0::/\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "3221225472\n",
			"sys/fs/cgroup/memory/docker/memory.limit_in_bytes":     "9223372036854771712\n"}, 3 * gib},
		{"v1 unlimited", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "4:memory,cpu:/a\n",
			"sys/fs/cgroup/memory/a/memory.limit_in_bytes": "9223372036854771712\n"}, 16 * gib},
		{"limit above the machine", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/a\n",
			"sys/fs/cgroup/a/memory.max": "34359738368\n"}, 16 * gib},
		{"unknown MemTotal", map[string]string{"proc/self/cgroup": "0::/a\n", "sys/fs/cgroup/a/memory.max": "1073741824\n"}, 1 * gib},
		{"nothing", map[string]string{}, 0},
	} {
		if got := memoryLimit(fakeRoot(t, c.files)); got != c.want {
			t.Errorf("%s: %.0f bytes, want %.0f", c.name, got, c.want)
		}
	}
}

// TestTrainRefusedByCgroup: a run estimated above 80% of its cgroup's 1 GB limit is
// refused in one line before it starts, although the machine has 16 GB.
func TestTrainRefusedByCgroup(t *testing.T) {
	defer func(r string) { hostRoot = r }(hostRoot)
	hostRoot = fakeRoot(t, map[string]string{"proc/meminfo": "MemTotal: 16777216 kB\n", "proc/self/cgroup": "0::/job\n",
		"sys/fs/cgroup/job/memory.max": "1000000000\n"})
	code, _, errOut := run(t, "train", "--env", "four_rooms", "--size", "ci", "--run", filepath.Join(t.TempDir(), "r"), "--quiet")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "this process may use 1.0 GB")
	if !strings.Contains(errOut, "needs about") {
		t.Errorf("no estimate in %q", errOut)
	}
}
