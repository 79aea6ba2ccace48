package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/settings"
)

// setFlag collects the values of a repeatable --set key=value.
type setFlag []string

func (s *setFlag) String() string { return strings.Join(*s, " ") }

func (s *setFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// help reports whether --set help (or list) was given.
func (s setFlag) help() bool { return slices.Contains(s, "help") || slices.Contains(s, "list") }

// without returns s without the values x and "list".
func (s setFlag) without(x string) setFlag {
	var out setFlag
	for _, v := range s {
		if v != x && v != "list" {
			out = append(out, v)
		}
	}
	return out
}

// writePresets lists train's presets, one line each.
func writePresets(w io.Writer) {
	fmt.Fprintln(w, "presets (train --preset NAME), laid over the environment's defaults before --size, --config and --set:")
	for _, p := range pipeline.Presets() {
		fmt.Fprintf(w, "  %-20s %s\n", p.Name, p.Summary)
	}
	fmt.Fprintf(w, "settings chosen for the world (before any preset; pipeline.WorldSettings): from %d places on,\n", gridworld.BiggerPlaces)
	fmt.Fprintln(w, "  joint.scaled_emissions=true final.merge_tokens=100 final.trainer=em, and where one class is at more")
	fmt.Fprintln(w, "  than half of the places also vqvae.k=(4 per class) warmup.merge_codes=30, and where the world's clone")
	fmt.Fprintf(w, "  budget would give the joint HMM more than %d states joint.clones=(%d over the classes); below %d places,\n", pipeline.JointMaxStates, pipeline.JointMaxStates, gridworld.BiggerPlaces)
	fmt.Fprintln(w, "  where one class is at more than half of the places, final.trainer=em alone (and, whatever the world,")
	fmt.Fprintln(w, "  a gradient map the verdict reads as merged is finalised again by EM unless final.keep_merged=true); for example:")
	for _, env := range []string{"big_room", "tiled", "four_rooms"} {
		e, err := gridworld.Named(env)
		if err != nil {
			continue
		}
		var kvs []string
		for _, ch := range pipeline.WorldSettings(e) {
			kvs = append(kvs, ch.KV())
		}
		fmt.Fprintf(w, "  %-20s %s\n", env, strings.Join(kvs, " "))
	}
}

// writeSettings lists every key --set takes, with its value in cfg (the defaults of
// the environment, preset and size given), its effect and its range.
func writeSettings(w io.Writer, cfg pipeline.Config) {
	preset := ""
	if cfg.Preset != "" {
		preset = ", preset " + cfg.Preset
	}
	fmt.Fprintf(w, "settings (--set key=value; here the values for %s%s and the size given):\n", cfg.Env, preset)
	var keys []settings.Key
	for _, k := range pipeline.Keys() {
		if pipeline.Settable(k.Path) {
			keys = append(keys, k)
		}
	}
	fmt.Fprint(w, settings.Help(settings.Rows(keys, &cfg)))
}

// writeSymbolicPresets lists symbolic's presets, one line each.
func writeSymbolicPresets(w io.Writer) {
	fmt.Fprintln(w, "presets (symbolic --preset NAME), laid over the environment's reference settings before --size and --set:")
	for _, p := range experiment.SymbolicPresets {
		fmt.Fprintf(w, "  %-14s %s\n", p.Name, p.Summary)
	}
}

// writeSymbolicSettings lists every key symbolic's --set takes, with its value in s.
func writeSymbolicSettings(w io.Writer, s experiment.Symbolic) {
	fmt.Fprintf(w, "settings (--set key=value; here the values for %s, trainer %s):\n", s.Env, s.Trainer)
	fmt.Fprint(w, settings.Help(settings.Rows(experiment.SymbolicKeys(), &s)))
}
