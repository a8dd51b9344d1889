package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Outcome is a spec's result.
type Outcome string

const (
	Pass Outcome = "PASS"
	Fail Outcome = "FAIL"
	Skip Outcome = "SKIP"
)

// Result is what running one spec gave.
type Result struct {
	Spec    Spec
	Outcome Outcome
	// State is Ginkgo's (passed, failed, skipped, timedout, panicked, ...),
	// or "no report" when the suite process died before writing one.
	State    string
	Duration time.Duration
	// Message is the failure or skip message; Where is where it failed
	// (file:line, and the node: It, BeforeEach, AfterEach, ...).
	Message string
	Where   string
	// Dir holds the spec's suite output, Ginkgo report and controller log.
	Dir string
}

// RunSpec runs one spec of the suite binary in its own process against the
// cluster of kubeconfig, focused on the spec's file and line, with Ginkgo's
// timeout; its output and JSON report go to dir.
func RunSpec(ctx context.Context, bin string, s Spec, kubeconfig, dir string, timeout time.Duration) Result {
	res := Result{Spec: s, Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res.failed("harness", err.Error())
	}
	rep := filepath.Join(dir, "report.json")
	os.Remove(rep)
	logf, err := os.Create(filepath.Join(dir, "suite.log"))
	if err != nil {
		return res.failed("harness", err.Error())
	}
	defer logf.Close()
	// Ginkgo's own timeout ends the spec (reported "timedout", its cleanup
	// given the grace period); the test binary's is the backstop.
	cmd := exec.CommandContext(ctx, bin,
		"-test.v", "-test.timeout", (timeout + 10*time.Minute).String(),
		"-ginkgo.focus-file="+s.Focus(),
		"-ginkgo.json-report="+rep,
		"-ginkgo.timeout="+timeout.String(),
		"-ginkgo.grace-period=5m",
		"-ginkgo.no-color", "-ginkgo.v",
	)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "OUTPUT_DIR="+dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	runErr := cmd.Run()
	res.Duration = time.Since(start)
	reports, err := readReport(rep)
	if err != nil {
		return res.failed("no report", fmt.Sprintf("the suite wrote no report (%v; exit: %v); see %s", err, runErr, logf.Name()))
	}
	var own *specReport
	var suiteFailure string
	for i := range reports {
		r := &reports[i]
		if r.isSpec() && r.LeafNodeLocation.LineNumber == s.Line && filepath.Base(r.LeafNodeLocation.FileName) == filepath.Base(s.File) {
			own = r
		}
		if !r.isSpec() && r.State != "passed" && r.Failure.Message != "" {
			suiteFailure = fmt.Sprintf("%s %s: %s", r.LeafNodeType, r.State, r.Failure.Message)
		}
	}
	if own == nil {
		return res.failed("no report", fmt.Sprintf("the report has no spec at %s (exit: %v); see %s", s.Where(), runErr, logf.Name()))
	}
	res.State, res.Duration = own.State, own.RunTime
	res.Message = strings.TrimSpace(own.Failure.Message)
	if own.Failure.Location.FileName != "" {
		res.Where = fmt.Sprintf("%s:%d (%s)", filepath.Base(own.Failure.Location.FileName), own.Failure.Location.LineNumber, own.Failure.FailureNodeType)
	}
	switch own.State {
	case "passed":
		res.Outcome = Pass
	case "skipped", "pending":
		// A spec the focus did not select is "skipped" with no message: that is
		// the harness's failure, not a skip the spec asked for.
		if res.Message == "" && suiteFailure == "" {
			return res.failed("not selected", fmt.Sprintf("-ginkgo.focus-file=%s did not select the spec", s.Focus()))
		}
		if suiteFailure != "" {
			return res.failed(own.State, suiteFailure)
		}
		res.Outcome = Skip
	default:
		res.Outcome = Fail
		if res.Message == "" {
			res.Message = suiteFailure
		}
	}
	return res
}

func (r Result) failed(state, msg string) Result {
	r.Outcome, r.State, r.Message = Fail, state, msg
	return r
}

// FirstLine is the message's first non-empty line, for one-line summaries.
func FirstLine(s string, max int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > max {
				l = l[:max-1] + "…"
			}
			return l
		}
	}
	return ""
}

// Summary is the closing line: "upstream regression: P passed, F failed, S skipped of N".
func Summary(suite string, results []Result, total int) string {
	var p, f, s int
	for _, r := range results {
		switch r.Outcome {
		case Pass:
			p++
		case Fail:
			f++
		case Skip:
			s++
		}
	}
	line := fmt.Sprintf("upstream %s: %d passed, %d failed, %d skipped of %d", suite, p, f, s, total)
	if n := len(results); n < total {
		line += fmt.Sprintf(" (%d not run: outside the focus)", total-n)
	}
	return line
}

// Table is the results as a Markdown table, in the suite's order.
func Table(results []Result) string {
	var b strings.Builder
	b.WriteString("| result | time | spec | where | failure or skip reason |\n|---|---:|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Outcome, r.Duration.Round(100*time.Millisecond),
			mdEscape(r.Spec.Text), r.Spec.Where(), mdEscape(FirstLine(r.Message, 160)))
	}
	return b.String()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
