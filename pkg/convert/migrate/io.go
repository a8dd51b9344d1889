package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// StdinName is the file name that means standard input.
const StdinName = "-"

// Source says where an object came from, so that every message can point
// at the document a user has to look at.
type Source struct {
	// File is the path the object was read from, or "-" for stdin.
	File string
	// Document is the 1-based position of the YAML document in File.
	Document int
	// Item is the 1-based position in the items of a List, 0 otherwise.
	Item int
	// Line is the file line the document starts on (1-based; 0 unknown).
	Line int
}

func (s Source) String() string {
	file := s.File
	if file == StdinName {
		file = "<stdin>"
	}
	out := fmt.Sprintf("%s, document %d", file, s.Document)
	if s.Line > 1 {
		out = fmt.Sprintf("%s, document %d (line %d)", file, s.Document, s.Line)
	}
	if s.Item > 0 {
		out += fmt.Sprintf(", item %d", s.Item)
	}
	return out
}

// Document is one object of the input, as read: unstructured, numbers kept
// as json.Number so that objects passed through are not altered.
type Document struct {
	Source Source
	Object map[string]interface{}
}

// APIVersion and Kind of the document, empty when absent or not strings.
func (d Document) APIVersion() string { s, _ := d.Object["apiVersion"].(string); return s }
func (d Document) Kind() string       { s, _ := d.Object["kind"].(string); return s }

// Name is metadata.name, empty when absent.
func (d Document) Name() string {
	md, _ := d.Object["metadata"].(map[string]interface{})
	s, _ := md["name"].(string)
	return s
}

// Namespace is metadata.namespace, empty when absent.
func (d Document) Namespace() string {
	md, _ := d.Object["metadata"].(map[string]interface{})
	s, _ := md["namespace"].(string)
	return s
}

// ParseError is a document that is not valid YAML/JSON or not an object.
type ParseError struct {
	Source Source
	Err    error
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s: %v", e.Source, e.Err) }
func (e *ParseError) Unwrap() error { return e.Err }

// manifestExtensions are the files a directory walk picks up.
var manifestExtensions = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// ReadPaths reads every path: "-" is stdin, a directory contributes its
// manifest files (.yaml, .yml, .json) in lexical order, descending into
// sub-directories when recursive is set (hidden directories such as .git are
// skipped). A file named explicitly is read whatever its extension.
func ReadPaths(paths []string, recursive bool, stdin io.Reader) ([]Document, error) {
	docs, _, err := ReadPathsWithEmpty(paths, recursive, stdin)
	return docs, err
}

// ReadPathsWithEmpty is ReadPaths that also names the inputs holding no
// document at all (the report flags them rather than calling them clean).
func ReadPathsWithEmpty(paths []string, recursive bool, stdin io.Reader) ([]Document, []string, error) {
	var docs []Document
	var empty []string
	add := func(r io.Reader, name string) error {
		d, err := ReadDocuments(r, name)
		if err != nil {
			return err
		}
		if len(d) == 0 {
			if name == StdinName {
				name = "<stdin>"
			}
			empty = append(empty, name)
		}
		docs = append(docs, d...)
		return nil
	}
	for _, p := range paths {
		if p == StdinName {
			if err := add(stdin, StdinName); err != nil {
				return nil, nil, err
			}
			continue
		}
		files, err := manifestFiles(p, recursive)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, nil, err
			}
			if err := add(bytes.NewReader(b), f); err != nil {
				return nil, nil, err
			}
		}
	}
	return docs, empty, nil
}

func manifestFiles(root string, recursive bool) ([]string, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{root}, nil
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if !recursive || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if manifestExtensions[strings.ToLower(filepath.Ext(path))] {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// WalkDir is lexical already; sorting keeps the order obvious and stable.
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .yaml, .yml or .json files (use -R to descend into sub-directories)", root)
	}
	return files, nil
}

// ReadDocuments splits r into YAML documents (JSON is YAML too) and returns
// the objects, flattening kind: List and *List objects (kubectl get -o yaml)
// into their items. Empty documents are skipped. A parse error names the
// line in the file, not in the document.
func ReadDocuments(r io.Reader, file string) ([]Document, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &ParseError{Source: Source{File: file}, Err: err}
	}
	var docs []Document
	for n, chunk := range splitDocuments(b) {
		src := Source{File: file, Document: n + 1, Line: chunk.line}
		raw := chunk.text
		if isBlank(raw) {
			continue
		}
		var v interface{}
		if err := yaml.Unmarshal(raw, &v, useNumber); err != nil {
			return nil, &ParseError{Source: src, Err: fileLines(err, chunk.line)}
		}
		if v == nil {
			continue
		}
		obj, ok := v.(map[string]interface{})
		if !ok {
			return nil, &ParseError{Source: src, Err: fmt.Errorf("expected an object, got %s", describe(v))}
		}
		if items, isList := listItems(obj); isList {
			for i, it := range items {
				itemSrc := src
				itemSrc.Item = i + 1
				o, ok := it.(map[string]interface{})
				if !ok {
					return nil, &ParseError{Source: itemSrc, Err: fmt.Errorf("expected an object, got %s", describe(it))}
				}
				docs = append(docs, Document{Source: itemSrc, Object: o})
			}
			continue
		}
		docs = append(docs, Document{Source: src, Object: obj})
	}
	return docs, nil
}

// chunk is one YAML document of a file and the file line it starts on.
type chunk struct {
	text []byte
	line int
}

// splitDocuments cuts a file at its "---" separator lines, remembering
// where each document starts so that errors can point into the file.
func splitDocuments(b []byte) []chunk {
	var out []chunk
	start, line := 1, 1
	var cur [][]byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if isSeparator(l) {
			out = append(out, chunk{text: bytes.Join(cur, nil), line: start})
			cur = nil
			start = line + 1
		} else if len(l) > 0 {
			cur = append(cur, l)
		}
		line++
	}
	return append(out, chunk{text: bytes.Join(cur, nil), line: start})
}

func isSeparator(l []byte) bool {
	t := bytes.TrimRight(l, " \t\r\n")
	return bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) || bytes.HasPrefix(t, []byte("---\t"))
}

var yamlLine = regexp.MustCompile(`\bline (\d+)`)

// fileLines shifts the "line N" of a YAML error, counted from the start of
// its document, to the file's numbering.
func fileLines(err error, start int) error {
	msg := yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, convErr := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if convErr != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+start-1)
	})
	return errors.New(msg)
}

func useNumber(d *json.Decoder) *json.Decoder {
	d.UseNumber()
	return d
}

// listItems recognises v1 List and typed lists (NodePoolList, ...): a kind
// ending in "List" with an items array.
func listItems(obj map[string]interface{}) ([]interface{}, bool) {
	kind, _ := obj["kind"].(string)
	if !strings.HasSuffix(kind, "List") {
		return nil, false
	}
	items, ok := obj["items"].([]interface{})
	if !ok && obj["items"] != nil {
		return nil, false
	}
	return items, true
}

func isBlank(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) != 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			return false
		}
	}
	return true
}

func describe(v interface{}) string {
	switch v.(type) {
	case []interface{}:
		return "a list"
	case string:
		return "a string"
	case json.Number, float64, int64:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return fmt.Sprintf("%T", v)
	}
}
