package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Never is the value of a NillableDuration that disables the behaviour it controls.
const Never = "Never"

// NillableDuration is a duration that may also be "Never". A nil Duration
// means Never.
//
// Raw keeps the exact text the user wrote (e.g. "720h" rather than
// "720h0m0s") so that rewriting an object through Go does not change its
// serialized spec; GitOps tools would otherwise see a diff after every
// controller update.
// +kubebuilder:validation:Type=string
type NillableDuration struct {
	*time.Duration `json:"-"`
	// Raw is the serialized form the value was decoded from, if any.
	Raw []byte `json:"-"`
}

// MustParseNillableDuration parses s ("Never" or a Go duration) and panics on
// error. It is meant for constants and tests.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// ParseNillableDuration parses s, which is "Never" or a Go duration.
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		return NillableDuration{Raw: []byte(`"` + Never + `"`)}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	raw, _ := json.Marshal(s)
	return NillableDuration{Duration: &d, Raw: raw}, nil
}

// NewNillableDuration returns a NillableDuration of d.
func NewNillableDuration(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d}
}

// NeverDuration returns an explicit Never. Unlike the zero value, which is
// omitted when serialized so that the schema default applies, it is written
// out as "Never".
func NeverDuration() NillableDuration {
	return NillableDuration{Raw: []byte(`"` + Never + `"`)}
}

// IsZero reports whether the value was never set. Fields of this type use the
// omitzero JSON option so that an unset value lets the CRD default apply.
func (d NillableDuration) IsZero() bool { return d.Duration == nil && len(d.Raw) == 0 }

// IsNever reports whether the duration is Never.
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// String renders the duration as it is serialized.
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	if s, ok := d.rawString(); ok {
		return s
	}
	return d.Duration.String()
}

// rawString returns Raw when it still denotes the current value.
func (d NillableDuration) rawString() (string, bool) {
	if len(d.Raw) == 0 {
		return "", false
	}
	var s string
	if err := json.Unmarshal(d.Raw, &s); err != nil {
		return "", false
	}
	if s == Never {
		return s, d.Duration == nil
	}
	parsed, err := time.ParseDuration(s)
	if err != nil || d.Duration == nil || parsed != *d.Duration {
		return "", false
	}
	return s, true
}

// Equal compares the durations denoted, ignoring their spelling.
func (d NillableDuration) Equal(o NillableDuration) bool {
	if d.Duration == nil || o.Duration == nil {
		return d.Duration == nil && o.Duration == nil
	}
	return *d.Duration == *o.Duration
}

// MarshalJSON renders "Never" for a nil duration.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON accepts "Never" or a Go duration string.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*d = NillableDuration{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string: %w", err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// ToUnstructured lets the structured-merge machinery treat the value as a string.
func (d NillableDuration) ToUnstructured() interface{} { return d.String() }
