package top

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var now = time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)

const (
	gi = int64(1) << 30
	mi = int64(1) << 20
)

// fleet is a small fleet with every kind of row: two pools (one with limits),
// a pool with no nodes, a pool that is gone, unmanaged nodes, a launching
// NodeClaim, an unpriced node and an overcommitted one.
func fleet() *Frame {
	return &Frame{
		Now: now, Cluster: "kind-local", PendingPods: 3,
		Pools: []Pool{
			{Name: "default", CPULimit: 100_000, MemLimit: 400 * gi, Nodes: []Node{
				{Name: "default-abcde", InstanceType: "c-4x-amd64-linux", CapacityType: "on-demand", Zone: "test-zone-a", State: "Ready",
					Created: now.Add(-3 * time.Hour), CPUReq: 3500, CPUAlloc: 4000, MemReq: 6 * gi, MemAlloc: 16 * gi, Pods: 7, Price: 0.1536, PriceKnown: true},
				{Name: "default-fghij", InstanceType: "m-8x-amd64-linux", CapacityType: "spot", Zone: "test-zone-b", State: "Ready",
					Created: now.Add(-45 * time.Minute), CPUReq: 2250, CPUAlloc: 8000, MemReq: 512 * mi, MemAlloc: 32 * gi, Pods: 3, Price: 0.0921, PriceKnown: true},
				{Name: "default-klmno", InstanceType: "c-2x-amd64-linux", CapacityType: "on-demand", Zone: "test-zone-c", State: "Launching",
					Created: now.Add(-20 * time.Second), CPUAlloc: 2000, MemAlloc: 4 * gi, Price: 0.0768, PriceKnown: true},
			}},
			{Name: "gpu"},
			{Name: "old", Gone: true, Nodes: []Node{
				{Name: "old-pqrst", InstanceType: "r-4x-amd64-linux", CapacityType: "reserved", Zone: "test-zone-a", State: "Cordoned",
					Created: now.Add(-50 * time.Hour), CPUReq: 5000, CPUAlloc: 4000, MemReq: 40 * gi, MemAlloc: 32 * gi, Pods: 12, Price: 0.2, PriceKnown: true},
			}},
			{Name: "", Unmanaged: true, Nodes: []Node{
				{Name: "control-plane-0", State: "NotReady", Created: now.Add(-400 * 24 * time.Hour), CPUReq: 950, CPUAlloc: 2000, MemReq: 1536 * mi, MemAlloc: 8 * gi, Pods: 9},
			}},
		},
	}
}

// bigFleet has pools of 60, 5 and 135 nodes.
func bigFleet() *Frame {
	f := &Frame{Now: now, Cluster: "kind-local"}
	for _, p := range []struct {
		name string
		n    int
	}{{"batch", 60}, {"small", 5}, {"web", 135}} {
		pool := Pool{Name: p.name}
		for i := 0; i < p.n; i++ {
			pool.Nodes = append(pool.Nodes, Node{
				Name: fmt.Sprintf("%s-%03d", p.name, i), InstanceType: "c-4x-amd64-linux", CapacityType: "spot", Zone: "test-zone-a", State: "Ready",
				Created: now.Add(-time.Duration(i) * time.Minute), CPUReq: int64(i%9) * 500, CPUAlloc: 4000, MemReq: int64(i%5) * 2 * gi, MemAlloc: 16 * gi,
				Pods: i % 9, Price: 0.05, PriceKnown: true,
			})
		}
		f.Pools = append(f.Pools, pool)
	}
	return f
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame *Frame
		o     Options
	}{
		{"pools-wide", fleet(), Options{Width: 200}},
		{"pools-160x50-live", fleet(), Options{Width: 160, Height: 50, Live: true}},
		{"pools-narrow-100", fleet(), Options{Width: 100}},
		{"pools-narrow-80", fleet(), Options{Width: 80}},
		{"pools-narrow-60", fleet(), Options{Width: 60}},
		{"pools-narrow-40", fleet(), Options{Width: 40}},
		{"truncated-160x30", bigFleet(), Options{Width: 160, Height: 30}},
		{"truncated-pools-160x8", bigFleet(), Options{Width: 160, Height: 8}},
		{"once-unlimited", bigFleet(), Options{Width: 160}},
		{"empty-syncing", &Frame{Now: now, Syncing: true}, Options{Width: 120, Height: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := Render(tc.frame, tc.o)
			for i, l := range lines {
				if n := utf8.RuneCountInString(l); n > tc.o.Width {
					t.Errorf("line %d is %d wide, past %d: %q", i, n, tc.o.Width, l)
				}
			}
			if tc.o.Height > 0 && len(lines) > tc.o.Height {
				t.Errorf("%d lines, past the height %d", len(lines), tc.o.Height)
			}
			got := strings.Join(lines, "\n") + "\n"
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("frame differs from %s (run with -update after checking):\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}

// Whatever the terminal's size, no line is wider than it and no frame taller,
// and as long as there is room, the total is the last line.
func TestRenderFitsAnySize(t *testing.T) {
	for _, f := range []*Frame{fleet(), bigFleet(), {Now: now}} {
		for w := 1; w <= 200; w += 7 {
			for h := 1; h <= 60; h += 3 {
				lines := Render(f, Options{Width: w, Height: h, Live: true})
				if len(lines) > h {
					t.Fatalf("%dx%d: %d lines", w, h, len(lines))
				}
				for _, l := range lines {
					if utf8.RuneCountInString(l) > w {
						t.Fatalf("%dx%d: line %q too wide", w, h, l)
					}
				}
				if h >= 3 && w >= 20 && !strings.HasPrefix(lines[len(lines)-1], "TOT") {
					t.Fatalf("%dx%d: last line %q is not the total", w, h, lines[len(lines)-1])
				}
			}
		}
	}
}
