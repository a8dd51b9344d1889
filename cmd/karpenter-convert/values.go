package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/pkg/convert/values"
)

// runValues is the values subcommand: one values file in, v1 values out,
// a note per moved or dropped key on stderr.
func runValues(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("karpenter-convert values", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var file, output string
	fs.StringVar(&file, "f", "", "values file to convert, or - for stdin")
	fs.StringVar(&file, "filename", "", "same as -f")
	fs.StringVar(&output, "o", "yaml", "output format: yaml or json")
	fs.StringVar(&output, "output", "yaml", "same as -o")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if file == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "error: usage: karpenter-convert values -f VALUES.yaml|- [-o yaml|json]")
		return exitUsage
	}
	if output != "yaml" && output != "json" {
		fmt.Fprintf(stderr, "error: -o %q: expected yaml or json\n", output)
		return exitUsage
	}
	var raw []byte
	var err error
	if file == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	old := map[string]any{}
	if err := yaml.Unmarshal(raw, &old); err != nil {
		fmt.Fprintf(stderr, "error: %s: %v\n", file, err)
		return exitError
	}
	converted, notes := values.Convert(old)
	for _, n := range notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	var out []byte
	if output == "json" {
		out, err = json.MarshalIndent(converted, "", "  ")
		out = append(out, '\n')
	} else {
		out, err = yaml.Marshal(converted)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	_, _ = stdout.Write(out)
	if len(values.Findings(old)) == 0 {
		return exitNothingToDo
	}
	return exitOK
}
