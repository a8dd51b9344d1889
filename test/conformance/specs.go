package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Spec is one of a suite's specs (a Ginkgo It or table Entry).
type Spec struct {
	// Text is the spec's full text: its containers' texts and its own.
	Text string
	// File and Line locate the spec's own node, which is how it is focused.
	File   string
	Line   int
	Labels []string
}

// Focus is the spec's -ginkgo.focus-file filter: its file's base name and its
// line, which names exactly one spec (texts need not be unique).
func (s Spec) Focus() string {
	return regexp.QuoteMeta(filepath.Base(s.File)) + ":" + fmt.Sprint(s.Line)
}

// Where is the spec's file:line for people.
func (s Spec) Where() string { return fmt.Sprintf("%s:%d", filepath.Base(s.File), s.Line) }

// report is the part of Ginkgo's JSON report (-ginkgo.json-report) read here.
type report []struct {
	SuiteDescription string
	SpecReports      []specReport
}

type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	LeafNodeLocation        location
	LeafNodeLabels          []string
	State                   string
	RunTime                 time.Duration
	Failure                 struct {
		Message  string
		Location location
		// FailureNodeType says where it failed (It, BeforeEach, AfterEach, ...).
		FailureNodeType string
	}
}

type location struct {
	FileName   string
	LineNumber int
}

func (r specReport) spec() Spec {
	text := strings.Join(append(append([]string{}, r.ContainerHierarchyTexts...), r.LeafNodeText), " ")
	return Spec{Text: text, File: r.LeafNodeLocation.FileName, Line: r.LeafNodeLocation.LineNumber, Labels: r.LeafNodeLabels}
}

// isSpec: a spec's report, not a suite-level node's (BeforeSuite, AfterSuite, ...).
func (r specReport) isSpec() bool { return r.LeafNodeType == "It" }

// ListSpecs asks the suite binary for its specs with a Ginkgo dry run (no
// cluster needed: nothing runs), in the order Ginkgo would run them unrandomized.
func ListSpecs(bin string) ([]Spec, error) {
	dir, err := os.MkdirTemp("", "conformance-list-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "report.json")
	cmd := exec.Command(bin, "-ginkgo.dry-run", "-ginkgo.no-color", "-ginkgo.json-report="+out)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s -ginkgo.dry-run: %v\n%s", bin, err, b)
	}
	reports, err := readReport(out)
	if err != nil {
		return nil, err
	}
	var specs []Spec
	for _, r := range reports {
		if r.isSpec() {
			specs = append(specs, r.spec())
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s lists no specs", bin)
	}
	return specs, nil
}

func readReport(path string) ([]specReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []specReport
	for _, s := range rep {
		out = append(out, s.SpecReports...)
	}
	return out, nil
}

// Select keeps the specs whose text matches focus (a regular expression; empty
// keeps all) and not skip.
func Select(specs []Spec, focus, skip string) ([]Spec, error) {
	var f, s *regexp.Regexp
	var err error
	if focus != "" {
		if f, err = regexp.Compile(focus); err != nil {
			return nil, fmt.Errorf("focus: %w", err)
		}
	}
	if skip != "" {
		if s, err = regexp.Compile(skip); err != nil {
			return nil, fmt.Errorf("skip: %w", err)
		}
	}
	var out []Spec
	for _, sp := range specs {
		if (f == nil || f.MatchString(sp.Text)) && (s == nil || !s.MatchString(sp.Text)) {
			out = append(out, sp)
		}
	}
	return out, nil
}
