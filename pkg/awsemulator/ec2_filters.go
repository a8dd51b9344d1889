package awsemulator

import (
	"strconv"
	"strings"
)

// filter is one EC2 Filter.N: Name and its Values (ORed). Filters are ANDed.
type filter struct {
	name   string
	values []string
}

// parseFilters reads Filter.N.Name / Filter.N.Value.M.
func parseFilters(c *call) []filter {
	var out []filter
	for i := 1; i <= c.count("Filter"); i++ {
		p := "Filter." + strconv.Itoa(i)
		out = append(out, filter{name: c.str(p + ".Name"), values: c.list(p + ".Value")})
	}
	return out
}

// filterFields tells the value(s) a resource has for a filter name; known=false for a
// filter the resource type does not support. Tag filters are handled by matchFilters.
type filterFields func(name string) (values []string, known bool)

// checkFilters rejects unknown filter names as EC2 does, before anything is matched.
func checkFilters(filters []filter, known map[string]bool) *apiError {
	for _, f := range filters {
		if f.name == "" {
			return errorf(400, "InvalidParameterValue", "The filter 'null' is invalid")
		}
		if strings.HasPrefix(f.name, "tag:") || f.name == "tag-key" || f.name == "tag-value" {
			continue
		}
		if !known[f.name] {
			return errorf(400, "InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
	}
	return nil
}

// matchFilters: every filter must match; a filter matches when any of its values
// matches any of the resource's values (with * and ? wildcards).
func matchFilters(filters []filter, fields filterFields, tags map[string]string) bool {
	for _, f := range filters {
		var have []string
		switch {
		case strings.HasPrefix(f.name, "tag:"):
			v, ok := tags[strings.TrimPrefix(f.name, "tag:")]
			if !ok {
				return false
			}
			have = []string{v}
		case f.name == "tag-key":
			have = sortedKeys(tags)
		case f.name == "tag-value":
			for _, v := range tags {
				have = append(have, v)
			}
		default:
			have, _ = fields(f.name)
		}
		if !anyMatch(f.values, have) {
			return false
		}
	}
	return true
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcardMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// wildcardMatch: '*' matches any run, '?' one character, '\' escapes the next one.
func wildcardMatch(pattern, s string) bool {
	if !strings.ContainsAny(pattern, `*?\`) {
		return pattern == s
	}
	p, v := []rune(pattern), []rune(s)
	var match func(i, j int) bool
	memo := map[[2]int]bool{}
	match = func(i, j int) bool {
		key := [2]int{i, j}
		if r, ok := memo[key]; ok {
			return r
		}
		var r bool
		switch {
		case i == len(p):
			r = j == len(v)
		case p[i] == '*':
			r = match(i+1, j) || (j < len(v) && match(i, j+1))
		case p[i] == '?':
			r = j < len(v) && match(i+1, j+1)
		case p[i] == '\\' && i+1 < len(p):
			r = j < len(v) && v[j] == p[i+1] && match(i+2, j+1)
		default:
			r = j < len(v) && v[j] == p[i] && match(i+1, j+1)
		}
		memo[key] = r
		return r
	}
	return match(0, 0)
}

func nameSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// fieldMap adapts a static map to filterFields.
func fieldMap(m map[string][]string) filterFields {
	return func(name string) ([]string, bool) {
		v, ok := m[name]
		return v, ok
	}
}
