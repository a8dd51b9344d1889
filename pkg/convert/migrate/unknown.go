package migrate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1alpha1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
)

// UnknownField is a field of a document that its API type does not have.
type UnknownField struct {
	// Path is the field, e.g. spec.provider.subnetSelectr.
	Path string
	// Suggestion is the closest known field at that place, "" when none is close.
	Suggestion string
}

func (u UnknownField) String() string {
	if u.Suggestion == "" {
		return fmt.Sprintf("unknown field %q", u.Path)
	}
	return fmt.Sprintf("unknown field %q (did you mean %q?)", u.Path, u.Suggestion)
}

// UnknownFieldsError lists every unknown field of one object, so that one
// run shows all of them rather than the first.
type UnknownFieldsError []UnknownField

func (e UnknownFieldsError) Error() string {
	parts := make([]string, len(e))
	for i, u := range e {
		parts[i] = u.String()
	}
	return strings.Join(parts, "; ")
}

// apiTypes are the Go types of the Karpenter kinds the converter decodes, by
// apiVersion and kind. Subtrees the types keep as raw JSON are checked
// against the type they are decoded into later (rawFields).
var apiTypes = map[string]reflect.Type{
	"karpenter.sh/v1alpha5/Provisioner":               reflect.TypeOf(v1alpha5.Provisioner{}),
	"karpenter.k8s.aws/v1alpha1/AWSNodeTemplate":      reflect.TypeOf(awsv1alpha1.AWSNodeTemplate{}),
	"karpenter.sh/v1beta1/NodePool":                   reflect.TypeOf(v1beta1.NodePool{}),
	"karpenter.k8s.aws/v1beta1/EC2NodeClass":          reflect.TypeOf(awsv1beta1.EC2NodeClass{}),
	"karpenter.sh/v1/NodePool":                        reflect.TypeOf(v1.NodePool{}),
	"karpenter.k8s.aws/v1/EC2NodeClass":               reflect.TypeOf(awsv1.EC2NodeClass{}),
	"karpenter.sh/v1alpha5/Provisioner#spec.provider": reflect.TypeOf(inlineProvider{}),
}

// inlineProvider is a Provisioner's spec.provider as written: the AWS
// settings, with the apiVersion and kind upstream's examples carry.
type inlineProvider struct {
	metav1.TypeMeta `json:",inline"`
	awsv1alpha1.AWS `json:",inline"`
}

// unknownFields returns every field of doc (status aside: it is dropped) that
// its API type lacks, in path order; nil for kinds it does not know.
func unknownFields(doc Document) []UnknownField {
	key := doc.APIVersion() + "/" + doc.Kind()
	t, ok := apiTypes[key]
	if !ok {
		return nil
	}
	obj := make(map[string]interface{}, len(doc.Object))
	for k, v := range doc.Object {
		if k != "status" {
			obj[k] = v
		}
	}
	var out []UnknownField
	var walk func(v interface{}, t reflect.Type, path string)
	walk = func(v interface{}, t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if raw, ok := apiTypes[key+"#"+path]; ok {
			t = raw
		} else if isLeaf(t) {
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			m, ok := v.(map[string]interface{})
			if !ok {
				return
			}
			fields := jsonFields(t)
			for _, k := range sortedKeys(m) {
				p := joinPath(path, k)
				ft, ok := fields[k]
				if !ok {
					out = append(out, UnknownField{Path: p, Suggestion: closest(k, fields)})
					continue
				}
				walk(m[k], ft, p)
			}
		case reflect.Map:
			m, ok := v.(map[string]interface{})
			if !ok {
				return
			}
			for _, k := range sortedKeys(m) {
				walk(m[k], t.Elem(), path+"["+k+"]")
			}
		case reflect.Slice, reflect.Array:
			l, ok := v.([]interface{})
			if !ok {
				return
			}
			for i, item := range l {
				walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(obj, t, "")
	return out
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// isLeaf: types that decode themselves (quantities, durations, times, raw
// extensions) and untyped values are not looked into.
func isLeaf(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	return reflect.PointerTo(t).Implements(unmarshalerType) || t.Implements(unmarshalerType)
}

// jsonFields maps the JSON names of a struct's fields, embedded and inline
// structs included, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if (f.Anonymous && name == "") || strings.Contains(opts, "inline") {
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func joinPath(path, k string) string {
	if strings.ContainsAny(k, "./") {
		return path + "[" + k + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// closest is the known field nearest to k: the same name in another case,
// or within an edit distance of a third of its length (at least 1, at most 3).
func closest(k string, fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	best, bestD := "", 0
	limit := len(k) / 3
	if limit < 1 {
		limit = 1
	}
	if limit > 3 {
		limit = 3
	}
	for _, n := range names {
		if strings.EqualFold(n, k) {
			return n
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(n)); d <= limit && (best == "" || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
