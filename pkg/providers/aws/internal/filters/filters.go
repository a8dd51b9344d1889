// Package filters turns EC2NodeClass selector terms into EC2 Describe*
// filters, and renders a term for the messages that report it.
//
// A term's fields are ANDed (EC2 ANDs the filters of one request); terms are
// ORed by the callers, one request per term. A tag value "*" means "the key
// exists with any value" (filter tag-key); any other value must match exactly
// (filter tag:<key>). Filters come out sorted by key so equal terms always
// produce equal requests (and cache keys).
package filters

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Tags returns the filters selecting resources that carry every tag.
func Tags(tags map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ec2types.Filter, 0, len(keys))
	for _, k := range keys {
		if tags[k] == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
			continue
		}
		out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{tags[k]}})
	}
	return out
}

// TagMap turns EC2's tag list into a map.
func TagMap(tags []ec2types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// Key renders filters (and owners) as a stable string, for cache keys.
func Key(fs []ec2types.Filter, extra ...string) string {
	type f struct {
		N string
		V []string
	}
	out := make([]f, 0, len(fs))
	for _, x := range fs {
		out = append(out, f{N: aws.ToString(x.Name), V: x.Values})
	}
	b, _ := json.Marshal(struct {
		F []f
		E []string
	}{out, extra})
	return string(b)
}

// DescribeTags renders tags as JSON with sorted keys, e.g.
// {"karpenter.sh/discovery":"demo"}, for messages.
func DescribeTags(tags map[string]string) string {
	b, _ := json.Marshal(tags) // encoding/json sorts map keys
	return string(b)
}

// Term renders a selector term for messages from its set fields, in the order they are
// added: Term{}.Field("id", t.ID).Tags(t.Tags).String() gives `id "subnet-1", tags {"a":"b"}`,
// or "empty term" when nothing is set. Every provider's DescribeTerm is built from it so
// their messages read alike.
type Term []string

// Field adds `name "value"` when value is set.
func (t Term) Field(name, value string) Term {
	if value == "" {
		return t
	}
	return append(t, fmt.Sprintf("%s %q", name, value))
}

// Tags adds `tags {...}` when tags are set.
func (t Term) Tags(tags map[string]string) Term {
	if len(tags) == 0 {
		return t
	}
	return append(t, "tags "+DescribeTags(tags))
}

func (t Term) String() string {
	if len(t) == 0 {
		return "empty term"
	}
	return strings.Join(t, ", ")
}

// Unmatched names every term that matched nothing, e.g.
// `subnetSelectorTerms[1] matched no subnet: tags {"Name":"missing"}`, joined by "; ";
// "" when every term matched. describe renders term i (with any reason appended).
func Unmatched(field, noun string, idx []int, describe func(i int) string) string {
	parts := make([]string, len(idx))
	for n, i := range idx {
		parts[n] = fmt.Sprintf("%s[%d] matched no %s: %s", field, i, noun, describe(i))
	}
	return strings.Join(parts, "; ")
}

// TermNames renders term indices for messages: "subnetSelectorTerms[0], subnetSelectorTerms[2]".
func TermNames(field string, idx []int) string {
	parts := make([]string, len(idx))
	for i, n := range idx {
		parts[i] = fmt.Sprintf("%s[%d]", field, n)
	}
	return strings.Join(parts, ", ")
}

// Uniq drops repeats from a sorted slice, keeping the first of each run.
func Uniq(sorted []string) []string {
	out := sorted[:0:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// Query is one Describe request and the indices of the selector terms it
// answers (ids of several terms share one request; other terms get their own).
type Query struct {
	Filters []ec2types.Filter
	Terms   []int
}

// Resolve runs every query through describe and merges what they found by
// id. matched reports whether term i is satisfied by what its query found
// (an id term needs its id among them; a tag term anything at all). It
// returns each resource once, in no particular order, and the indices of the
// terms that matched nothing, ascending. Errors name the terms whose request
// failed, e.g. "describing subnets for subnetSelectorTerms[0]: ...".
func Resolve[T any](queries []Query, nTerms int, noun, field string,
	describe func([]ec2types.Filter) ([]T, error), id func(T) string, matched func(term int, found []T) bool) ([]T, []int, error) {
	ok := make([]bool, nTerms)
	byID := map[string]T{}
	for _, q := range queries {
		found, err := describe(q.Filters)
		if err != nil {
			return nil, nil, fmt.Errorf("describing %s for %s: %w", noun, TermNames(field, q.Terms), err)
		}
		for _, r := range found {
			byID[id(r)] = r
		}
		for _, i := range q.Terms {
			ok[i] = matched(i, found)
		}
	}
	var unmatched []int
	for i := range ok {
		if !ok[i] {
			unmatched = append(unmatched, i)
		}
	}
	all := make([]T, 0, len(byID))
	for _, r := range byID {
		all = append(all, r)
	}
	return all, unmatched, nil
}
