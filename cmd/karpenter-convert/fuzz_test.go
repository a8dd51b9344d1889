package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/convert/migrate"
)

const fuzzFile = "fuzz.yaml"

// FuzzConvert feeds arbitrary bytes through reading, conversion (both
// targets), writing and the report. It checks that nothing panics, that
// every failure is an error naming the object (kind, name and document) or
// the document that could not be parsed, and that a successful conversion
// is final: its output, read back, has nothing left to convert.
//
// The seed corpus is every input of testdata/, so `go test` runs them all;
// `go test -fuzz FuzzConvert ./cmd/karpenter-convert` explores further.
func FuzzConvert(f *testing.F) {
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() || strings.HasSuffix(name, ".golden") || name == "args" {
			return nil
		}
		if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" || ext == ".json" || name == "stdin" {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f.Add(b)
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := migrate.ReadDocuments(bytes.NewReader(data), fuzzFile)
		if err != nil {
			var pe *migrate.ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), fuzzFile+", document ") {
				t.Fatalf("read error does not name the document: %v", err)
			}
			return
		}
		if err := migrate.WriteReport(&bytes.Buffer{}, migrate.Report(docs), migrate.FormatJSON); err != nil {
			t.Fatalf("report: %v", err)
		}
		for _, opts := range []migrate.Options{
			{To: migrate.TargetV1},
			{To: migrate.TargetV1beta1, IgnoreDefaults: true, NodeRole: "role"},
		} {
			checkConvert(t, docs, opts)
		}
	})
}

func checkConvert(t *testing.T, docs []migrate.Document, opts migrate.Options) {
	res, err := migrate.Convert(docs, opts)
	if errors.Is(err, migrate.ErrNothingToConvert) {
		return
	}
	if err != nil {
		var errs migrate.Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("to %s: error is not a list of object errors: %v", opts.To, err)
		}
		for _, e := range errs {
			var oe *migrate.ObjectError
			if !errors.As(e, &oe) {
				t.Fatalf("to %s: error does not name its object: %v", opts.To, e)
			}
			// The document always; kind and name whenever the object has them.
			msg := e.Error()
			if !strings.Contains(msg, oe.Source.String()) ||
				(oe.Kind != "" && !strings.Contains(msg, oe.Kind+" ")) ||
				(oe.Name != "" && !strings.Contains(msg, strconv.Quote(oe.Name))) {
				t.Fatalf("to %s: error message does not name kind, name and document: %v", opts.To, e)
			}
		}
		return
	}
	var out bytes.Buffer
	if err := migrate.Write(&out, res.Objects, migrate.FormatYAML); err != nil {
		t.Fatalf("to %s: writing the result: %v", opts.To, err)
	}
	again, err := migrate.ReadDocuments(&out, "output")
	if err != nil {
		t.Fatalf("to %s: output does not read back: %v\n%s", opts.To, err, out.String())
	}
	// Idempotent: the output holds nothing left to convert (it passes through).
	res2, err := migrate.Convert(again, opts)
	converted := 0
	if res2 != nil {
		converted = res2.Converted
	}
	if err != nil && !errors.Is(err, migrate.ErrNothingToConvert) || converted != 0 {
		t.Fatalf("to %s: converting the output again = %v (converted %d), want nothing to convert\n%s", opts.To, err, converted, out.String())
	}
}
