package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// hostRoot is where memoryLimit finds /proc and /sys ("/"; tests point it at fake files).
var hostRoot = "/"

// memoryLimit is the memory this process may use (bytes; 0 when unknown), read under
// root ("/" but in tests): the smaller of the machine's MemTotal and the limit of the
// process's memory cgroup, the tightest along its path — cgroup v2's memory.max under
// /sys/fs/cgroup (or /sys/fs/cgroup/unified), v1's memory.limit_in_bytes under
// /sys/fs/cgroup/memory — found through /proc/self/cgroup. "max", and v1's huge
// "unlimited" values, are no limit.
func memoryLimit(root string) float64 {
	limit := memInfoTotal(filepath.Join(root, "proc/meminfo"))
	for _, l := range cgroupLimits(root) {
		if limit == 0 || l < limit {
			limit = l
		}
	}
	return limit
}

// memInfoTotal is MemTotal of a /proc/meminfo file in bytes (0 when unknown).
func memInfoTotal(path string) float64 {
	b, err := readSmall(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var kb float64
		if n, _ := fmt.Sscanf(sc.Text(), "MemTotal: %f kB", &kb); n == 1 {
			return kb * 1024
		}
	}
	return 0
}

// cgroupLimits returns the memory limits (bytes) on the path of this process's memory
// cgroup under root, for v2 and v1 hierarchies alike.
func cgroupLimits(root string) []float64 {
	b, err := readSmall(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return nil
	}
	var limits []float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var mounts []string
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			mounts, file = []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"}, "memory.max"
		case hasController(parts[1], "memory"): // v1
			mounts, file = []string{"sys/fs/cgroup/memory"}, "memory.limit_in_bytes"
		default:
			continue
		}
		for _, m := range mounts {
			limits = append(limits, pathLimits(filepath.Join(root, m), parts[2], file)...)
		}
	}
	return limits
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// pathLimits reads file in the cgroup directory of path under mount and in each of its
// ancestors up to mount (a limit applies to everything below it). Inside a cgroup
// namespace path may not exist under mount; then mount's own file is the one.
func pathLimits(mount, path, file string) []float64 {
	var out []float64
	dir := filepath.Join(mount, filepath.Clean("/"+path))
	for {
		if l, ok := readLimit(filepath.Join(dir, file)); ok {
			out = append(out, l)
		}
		if dir == mount || len(dir) < len(mount) {
			return out
		}
		dir = filepath.Dir(dir)
	}
}

// readLimit reads a cgroup memory limit file: a byte count, or "max" (none). Values
// from 2^62 up are v1's way of saying "none".
func readLimit(path string) (float64, bool) {
	b, err := readSmall(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 || v >= 1<<62 {
		return 0, false
	}
	return float64(v), true
}

// readSmall reads the start of a kernel file (/proc, /sys): at most 64 KiB.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 64<<10)
	n, err := f.Read(b)
	if n == 0 && err != nil {
		return nil, err
	}
	return b[:n], nil
}
