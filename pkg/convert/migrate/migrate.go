package migrate

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1alpha1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
)

// Target versions.
const (
	TargetV1      = "v1"
	TargetV1beta1 = "v1beta1"
)

// Options steer a conversion.
type Options struct {
	// To is TargetV1 (the default) or TargetV1beta1.
	To string
	// IgnoreDefaults leaves out the requirements the alpha webhook used to
	// add to Provisioners (linux, amd64, on-demand, c/m/r generation > 2).
	IgnoreDefaults bool
	// NodeRole is written into spec.role of EC2NodeClasses made from alpha
	// objects; DefaultNodeRole (an envsubst placeholder) when empty.
	NodeRole string
	// KeepInstanceProfile keeps an alpha object's instanceProfile as the
	// EC2NodeClass's spec.instanceProfile (unmanaged by Karpenter) instead of
	// replacing it with spec.role, for profiles other tooling owns.
	KeepInstanceProfile bool
}

// ErrNothingToConvert is returned when no input object is a Karpenter
// object that needs converting to the target version.
var ErrNothingToConvert = errors.New("nothing to convert: no Provisioner, AWSNodeTemplate, or (for --to v1) v1beta1 NodePool or EC2NodeClass in the input")

// Note is one line for the user about one object: what was passed through,
// dropped, made explicit or split.
type Note struct {
	Source  Source
	Kind    string
	Name    string
	Message string
}

func (n Note) String() string {
	return fmt.Sprintf("%s (%s): %s", objectName(n.Kind, n.Name), n.Source, n.Message)
}

// Result is the output of a conversion, in input order.
type Result struct {
	Objects []map[string]interface{}
	Notes   []Note
	// Converted counts the output objects that differ from an input object
	// (new or rewritten).
	Converted int
	// Current counts the Karpenter objects already at the target version,
	// passed through.
	Current int
	// Duplicates are output objects of the same kind and name made from
	// different inputs: applied together, the last silently wins.
	Duplicates []Duplicate
}

// Duplicate is one kind and name that more than one input produces.
type Duplicate struct {
	Kind, Name string
	Sources    []Source
}

// entry is one output object while the conversion runs. Exactly one of the
// object fields is set.
type entry struct {
	src        Source
	kind, name string // of the input object, for messages

	raw    map[string]interface{} // passed through (cleaned if a Karpenter kind)
	npBeta *v1beta1.NodePool
	ncBeta *awsv1beta1.EC2NodeClass
	npV1   *v1.NodePool
	ncV1   *awsv1.EC2NodeClass

	converted bool
	// fromBeta marks a v1 NodePool that was v1beta1 in this run; kubelet is
	// its v1beta1 kubelet, which the v1 migration moves to its EC2NodeClass.
	fromBeta bool
	kubelet  *v1beta1.KubeletConfiguration
	// splitOf is the class an EC2NodeClass was split off for another kubelet.
	splitOf *entry
}

type converter struct {
	opts    Options
	order   map[Source]int // position of each input document
	entries []*entry
	notes   []Note
	errs    Errors
}

// Convert migrates every Karpenter object of docs to opts.To and passes the
// other objects through. It returns all object errors at once (Errors) and
// no result when there is any, so nothing half-converted is ever printed.
func Convert(docs []Document, opts Options) (*Result, error) {
	if opts.To == "" {
		opts.To = TargetV1
	}
	if opts.To != TargetV1 && opts.To != TargetV1beta1 {
		return nil, fmt.Errorf("unknown target version %q (expected v1 or v1beta1)", opts.To)
	}
	c := &converter{opts: opts, order: map[Source]int{}}
	for i, d := range docs {
		c.order[d.Source] = i
		c.read(d)
	}
	if opts.To == TargetV1 && len(c.errs) == 0 {
		c.toV1()
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	// Notes are made in phases (reading, then the v1 migration); print them
	// in input order so that each object's notes stay together.
	sort.SliceStable(c.notes, func(i, j int) bool { return c.order[c.notes[i].Source] < c.order[c.notes[j].Source] })
	res := &Result{}
	type outKey struct{ apiVersion, kind, namespace, name string }
	bySrc := map[outKey][]Source{}
	alphaIn := map[outKey]bool{}
	newIn := map[outKey]bool{}
	var keys []outKey
	for _, e := range c.entries {
		obj, err := e.render()
		if err != nil {
			return nil, &ObjectError{Kind: e.kind, Name: e.name, Source: e.src, Err: err}
		}
		switch {
		case e.converted:
			res.Converted++
		case e.npBeta != nil || e.ncBeta != nil || e.npV1 != nil || e.ncV1 != nil:
			res.Current++
		}
		res.Objects = append(res.Objects, obj)
		d := Document{Object: obj}
		if group, _ := splitAPIVersion(d.APIVersion()); isKarpenterGroup(group) {
			k := outKey{d.APIVersion(), d.Kind(), d.Namespace(), d.Name()}
			if bySrc[k] == nil {
				keys = append(keys, k)
			}
			bySrc[k] = append(bySrc[k], e.src)
			if e.kind == "Provisioner" || e.kind == "AWSNodeTemplate" {
				alphaIn[k] = true
			} else {
				newIn[k] = true
			}
		}
	}
	for _, k := range keys {
		if srcs := bySrc[k]; len(srcs) > 1 {
			res.Duplicates = append(res.Duplicates, Duplicate{Kind: k.kind, Name: k.name, Sources: srcs})
			where := make([]string, len(srcs))
			for i, s := range srcs {
				where[i] = s.String()
			}
			advice := "convert each cluster's directory separately"
			if alphaIn[k] && newIn[k] {
				advice = "this tree is midway through a migration: keep the new object, delete the old manifest once its nodes have moved, and convert only the files without a successor"
			}
			c.note(srcs[len(srcs)-1], k.kind, k.name, "duplicate output: %s is produced from %s; applied together the last one wins (%s)",
				objectName(k.kind, k.name), strings.Join(where, " and "), advice)
		}
	}
	sort.SliceStable(c.notes, func(i, j int) bool { return c.order[c.notes[i].Source] < c.order[c.notes[j].Source] })
	res.Notes = c.notes
	if res.Converted == 0 {
		if res.Current > 0 {
			return res, nil
		}
		return res, ErrNothingToConvert
	}
	return res, nil
}

func (c *converter) note(src Source, kind, name, format string, args ...interface{}) {
	c.notes = append(c.notes, Note{Source: src, Kind: kind, Name: name, Message: fmt.Sprintf(format, args...)})
}

func (c *converter) fail(src Source, kind, name string, err error) {
	c.errs = append(c.errs, &ObjectError{Kind: kind, Name: name, Source: src, Err: err})
}

// read classifies one input document and converts alpha objects to v1beta1.
func (c *converter) read(d Document) {
	apiVersion, kind, name := d.APIVersion(), d.Kind(), d.Name()
	group, version := splitAPIVersion(apiVersion)
	src := d.Source
	if !isKarpenterGroup(group) {
		what := kind
		if what == "" {
			what = "document without kind"
		}
		c.note(src, what, name, "not a Karpenter object, passed through unchanged")
		c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, raw: d.Object})
		return
	}
	before := len(c.entries)
	failed := func(err error) { c.fail(src, kind, name, err) }
	if unknown := unknownFields(d); len(unknown) > 0 {
		failed(UnknownFieldsError(unknown))
		return
	}
	warn := func(msg string) { c.note(src, kind, name, "%s", msg) }
	switch {
	case group == v1.Group && version == "v1alpha5" && kind == "Provisioner":
		p := &v1alpha5.Provisioner{}
		if err := decodeStrict(d.Object, p); err != nil {
			failed(err)
			return
		}
		np, nc, err := provisionerToNodePool(p, c.opts, warn)
		if err != nil {
			failed(err)
			return
		}
		c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, npBeta: np, converted: true})
		if nc != nil {
			c.note(src, kind, name, "spec.provider became EC2NodeClass %q", nc.Name)
			c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, ncBeta: nc, converted: true})
		}
	case group == awsv1.Group && version == "v1alpha1" && kind == "AWSNodeTemplate":
		t := &awsv1alpha1.AWSNodeTemplate{}
		if err := decodeStrict(d.Object, t); err != nil {
			failed(err)
			return
		}
		nc, err := nodeTemplateToEC2NodeClass(t, c.opts, "spec", warn)
		if err != nil {
			failed(err)
			return
		}
		c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, ncBeta: nc, converted: true})
	case group == v1.Group && kind == "Machine", group == v1.Group && kind == "NodeClaim":
		c.note(src, kind, name, "omitted: %ss are created and deleted by Karpenter, not by manifests", kind)
	case group == v1.Group && version == "v1beta1" && kind == "NodePool":
		np := &v1beta1.NodePool{}
		if err := decodeStrict(d.Object, np); err != nil {
			failed(err)
			return
		}
		c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, npBeta: np, raw: d.Object})
	case group == awsv1.Group && version == "v1beta1" && kind == "EC2NodeClass":
		nc := &awsv1beta1.EC2NodeClass{}
		if err := decodeStrict(d.Object, nc); err != nil {
			failed(err)
			return
		}
		c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, ncBeta: nc, raw: d.Object})
	case group == v1.Group && version == "v1" && kind == "NodePool":
		np := &v1.NodePool{}
		if err := decodeStrict(d.Object, np); err != nil {
			failed(err)
			return
		}
		c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, npV1: np, raw: d.Object})
	case group == awsv1.Group && version == "v1" && kind == "EC2NodeClass":
		nc := &awsv1.EC2NodeClass{}
		if err := decodeStrict(d.Object, nc); err != nil {
			failed(err)
			return
		}
		c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, ncV1: nc, raw: d.Object})
	case group == "karpenter.kwok.sh":
		c.note(src, kind, name, "already current, passed through")
		c.entries = append(c.entries, &entry{src: src, kind: kind, name: name, raw: d.Object})
	default:
		failed(fmt.Errorf("apiVersion %q, kind %q is not a Karpenter kind this tool knows (Provisioner and AWSNodeTemplate (alpha), NodePool and EC2NodeClass (v1beta1, v1))", apiVersion, kind))
		return
	}
	if len(c.entries) > before {
		last := c.entries[len(c.entries)-1]
		switch {
		case c.opts.To == TargetV1 && (last.npV1 != nil || last.ncV1 != nil):
			c.note(src, kind, name, "already v1, passed through")
		case c.opts.To == TargetV1beta1 && (last.npV1 != nil || last.ncV1 != nil):
			failed(fmt.Errorf("is already v1; karpenter-convert does not convert to an older version (--to v1beta1)"))
		case c.opts.To == TargetV1beta1 && !last.converted && (last.npBeta != nil || last.ncBeta != nil):
			c.note(src, kind, name, "already v1beta1, passed through")
		}
	}
}

// render returns the object to print.
func (e *entry) render() (map[string]interface{}, error) {
	if !e.converted {
		// Unchanged: print the input itself, so that nothing the types do
		// not model is lost; Karpenter kinds lose server-populated fields.
		out := deepCopyJSON(e.raw)
		if e.npBeta != nil || e.ncBeta != nil || e.npV1 != nil || e.ncV1 != nil {
			clean(out)
		}
		return out, nil
	}
	switch {
	case e.npV1 != nil:
		return toUnstructured(e.npV1)
	case e.ncV1 != nil:
		return toUnstructured(e.ncV1)
	case e.npBeta != nil:
		return toUnstructured(e.npBeta)
	case e.ncBeta != nil:
		return toUnstructured(e.ncBeta)
	}
	return toUnstructured(e.raw)
}

func deepCopyJSON(m map[string]interface{}) map[string]interface{} {
	if m == nil {
		return nil
	}
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		return deepCopyJSON(t)
	case []interface{}:
		out := make([]interface{}, len(t))
		for i := range t {
			out[i] = deepCopyValue(t[i])
		}
		return out
	default:
		return v
	}
}

func splitAPIVersion(apiVersion string) (group, version string) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return "", apiVersion
	}
	return group, version
}

func isKarpenterGroup(group string) bool {
	return group == v1.Group || group == awsv1.Group || group == "karpenter.kwok.sh"
}

// sameDir reports whether two sources come from the same directory, which
// the v1 migration uses to tell apart same-named objects of different
// clusters in one repository.
func sameDir(a, b Source) bool { return filepath.Dir(a.File) == filepath.Dir(b.File) }
