package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ObjectError is a failure to convert one object. Its message names the
// kind, the name and the document, so that a run over a whole repository
// says exactly what to fix.
type ObjectError struct {
	Kind   string
	Name   string
	Source Source
	Err    error
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("%s (%s): %v", objectName(e.Kind, e.Name), e.Source, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// Errors are all the object errors of one run; Convert reports every one of
// them rather than stopping at the first.
type Errors []error

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "\n")
}

func objectName(kind, name string) string {
	if name == "" {
		name = "<no name>"
	}
	if kind == "" {
		kind = "object"
	}
	return fmt.Sprintf("%s %q", kind, name)
}

// decodeStrict fills out from the document, rejecting fields the type does
// not know: a misspelt or unsupported field would otherwise vanish from the
// converted manifest without a word. Status is ignored, it is dropped anyway.
func decodeStrict(obj map[string]interface{}, out interface{}) error {
	spec := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		if k != "status" {
			spec[k] = v
		}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}
