package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// update rewrites the golden files from what the command prints now:
//
//	go test ./cmd/karpenter-convert -run TestGolden -update
var update = flag.Bool("update", false, "rewrite testdata/*/ golden files")

// goldenCase is one directory of testdata: "args" holds the command line
// (one argument per line, paths relative to the case directory; "stdin" in
// the directory is fed to -f -), and the golden files hold what the command
// must print and return.
type goldenCase struct {
	name, dir string
	args      []string
}

const (
	goldenStdout = "stdout.golden"
	goldenStderr = "stderr.golden"
	goldenExit   = "exit.golden"
)

func goldenCases(t testing.TB) []goldenCase {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "args"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no testdata/*/args")
	}
	var cases []goldenCase
	for _, argsFile := range dirs {
		dir := filepath.Dir(argsFile)
		b, err := os.ReadFile(argsFile)
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				args = append(args, line)
			}
		}
		cases = append(cases, goldenCase{name: filepath.Base(dir), dir: dir, args: args})
	}
	return cases
}

// runCase runs the command from inside the case directory so that file
// names in messages are relative and the goldens do not depend on where
// the repository is checked out.
func runCase(t *testing.T, c goldenCase) (stdout, stderr string, code int) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(c.dir); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Chdir(wd); err != nil {
			t.Fatal(err)
		}
	}()
	var stdin []byte
	if b, err := os.ReadFile("stdin"); err == nil {
		stdin = b
	}
	var out, errOut bytes.Buffer
	code = run(c.args, bytes.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestGolden runs every testdata case and compares stdout, stderr and the
// exit status with the golden files.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runCase(t, c)
			got := map[string]string{goldenStdout: stdout, goldenStderr: stderr, goldenExit: strconv.Itoa(code) + "\n"}
			for file, content := range got {
				path := filepath.Join(c.dir, file)
				if *update {
					if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if string(want) != content {
					t.Errorf("%s differs.\n--- want\n%s\n--- got\n%s", path, want, content)
				}
			}
		})
	}
}

// TestGoldenDeterministic runs every case twice: the output may not depend
// on map iteration order.
func TestGoldenDeterministic(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			out1, err1, code1 := runCase(t, c)
			for range 3 {
				out2, err2, code2 := runCase(t, c)
				if out1 != out2 || err1 != err2 || code1 != code2 {
					t.Fatalf("second run differs:\n%s\n%s\nvs\n%s\n%s", out1, err1, out2, err2)
				}
			}
		})
	}
}
