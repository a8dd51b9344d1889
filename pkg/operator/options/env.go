package options

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Env gives flags their defaults from environment variables, as upstream
// Karpenter names them, and remembers every value that does not parse, so that
// all bad settings are reported at once, each named by its variable. The core
// settings and each cloud provider's (pkg/cloudprovider.Provider.AddFlags)
// read the environment through one.
type Env struct {
	getenv func(string) string
	errs   []error
}

// NewEnv reads variables through getenv (os.Getenv when nil). An empty value
// counts as unset.
func NewEnv(getenv func(string) string) *Env {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Env{getenv: getenv}
}

// Err joins the errors of the values that did not parse (nil if none).
func (e *Env) Err() error { return errors.Join(e.errs...) }

func (e *Env) lookup(name string) (string, bool) {
	v := e.getenv(name)
	return v, v != ""
}

// String returns the variable, or def when it is unset.
func (e *Env) String(name, def string) string {
	if v, ok := e.lookup(name); ok {
		return v
	}
	return def
}

// Int returns the variable as an int, or def when it is unset or bad.
func (e *Env) Int(name string, def int) int {
	if v, ok := e.lookup(name); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q is not an integer", name, v))
			return def
		}
		return n
	}
	return def
}

// Int64 is Int for int64 settings.
func (e *Env) Int64(name string, def int64) int64 { return int64(e.Int(name, int(def))) }

// Float64 returns the variable as a number, or def when it is unset or bad.
func (e *Env) Float64(name string, def float64) float64 {
	if v, ok := e.lookup(name); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q is not a number", name, v))
			return def
		}
		return f
	}
	return def
}

// Bool returns the variable as a boolean, or def when it is unset or bad.
func (e *Env) Bool(name string, def bool) bool {
	if v, ok := e.lookup(name); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q is not a boolean", name, v))
			return def
		}
		return b
	}
	return def
}

// Duration returns the variable as a duration ("90s", "5m"), or def when it
// is unset or bad.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	if v, ok := e.lookup(name); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q is not a duration", name, v))
			return def
		}
		return d
	}
	return def
}
