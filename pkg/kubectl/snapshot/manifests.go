package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/convert/migrate"
)

// Manifest is one object read from -f, typed, with where it came from.
type Manifest struct {
	Object client.Object
	Source migrate.Source
	// ConvertedFrom is "v1alpha5 Provisioner default" when the object is the
	// conversion of an older one.
	ConvertedFrom string
}

// Describe names the object and its origin for messages.
func (m Manifest) Describe() string {
	s := fmt.Sprintf("%s %s (%s)", m.Object.GetObjectKind().GroupVersionKind().Kind, name(m.Object), m.Source)
	if m.ConvertedFrom != "" {
		s += ", converted from " + m.ConvertedFrom
	}
	return s
}

func name(o client.Object) string {
	if o.GetNamespace() != "" {
		return o.GetNamespace() + "/" + o.GetName()
	}
	return o.GetName()
}

// oldVersions are the Karpenter versions a manifest is converted from.
func isOld(d migrate.Document) bool {
	switch d.APIVersion() {
	case "karpenter.sh/v1alpha5", "karpenter.sh/v1beta1", "karpenter.k8s.aws/v1alpha1", "karpenter.k8s.aws/v1beta1":
		return true
	}
	return false
}

// ReadManifests reads files and directories (recursively) and returns typed
// objects: v1alpha5 and v1beta1 Karpenter objects converted to v1 through the
// conversion library, Karpenter custom resources defaulted and validated as
// the apiserver would (OpenAPI schema and the CRDs' CEL rules). Any invalid
// object fails the whole read, each error naming file, object and field;
// notes say what the conversion did.
func ReadManifests(ctx context.Context, paths []string, stdin io.Reader) ([]Manifest, []string, error) {
	docs, err := migrate.ReadPaths(paths, true, stdin)
	if err != nil {
		return nil, nil, err
	}
	var current, old []migrate.Document
	for _, d := range docs {
		if isOld(d) {
			old = append(old, d)
		} else {
			current = append(current, d)
		}
	}
	var out []Manifest
	var notes []string
	var errs []error
	for _, d := range current {
		m, err := decode(ctx, d.Object, d.Source, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, m)
	}
	if len(old) > 0 {
		res, err := migrate.Convert(old, migrate.Options{To: migrate.TargetV1})
		if err != nil && !errors.Is(err, migrate.ErrNothingToConvert) {
			errs = append(errs, fmt.Errorf("converting old manifests: %w", err))
		} else if res != nil {
			for _, n := range res.Notes {
				notes = append(notes, "conversion: "+n.String())
			}
			for _, obj := range res.Objects {
				src, from := originOf(old, obj)
				m, err := decode(ctx, obj, src, from)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				out = append(out, m)
			}
		}
	}
	if len(errs) > 0 {
		return nil, notes, errors.Join(errs...)
	}
	return out, notes, nil
}

// originOf finds the old document a converted object came from: same name
// (a Provisioner becomes the NodePool of its name, an AWSNodeTemplate or an
// inline provider the EC2NodeClass of its name).
func originOf(old []migrate.Document, obj map[string]interface{}) (migrate.Source, string) {
	d := migrate.Document{Object: obj}
	for _, o := range old {
		if o.Name() == d.Name() || strings.HasPrefix(d.Name(), o.Name()+"-") {
			_, version, _ := strings.Cut(o.APIVersion(), "/")
			return o.Source, fmt.Sprintf("%s %s %s", version, o.Kind(), o.Name())
		}
	}
	return migrate.Source{File: "(conversion)"}, ""
}

// decode types one unstructured object, after defaulting and validating
// Karpenter custom resources against their CRD.
func decode(ctx context.Context, obj map[string]interface{}, src migrate.Source, from string) (Manifest, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", src, err)
	}
	var generic map[string]interface{}
	if err := json.Unmarshal(raw, &generic); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", src, err)
	}
	d := migrate.Document{Object: generic}
	gv, err := schema.ParseGroupVersion(d.APIVersion())
	if err != nil || d.Kind() == "" {
		return Manifest{}, fmt.Errorf("%s: not a Kubernetes object (apiVersion %q, kind %q)", src, d.APIVersion(), d.Kind())
	}
	gvk := gv.WithKind(d.Kind())
	what := fmt.Sprintf("%s %s (%s)", gvk.Kind, d.Name(), src)
	if from != "" {
		what += ", converted from " + from
	}
	fieldErrs, err := DefaultAndValidate(ctx, gvk, generic)
	if err != nil {
		return Manifest{}, err
	}
	if len(fieldErrs) > 0 {
		return Manifest{}, fmt.Errorf("%s is invalid: %s", what, FieldErrors(fieldErrs))
	}
	scheme := Scheme()
	typed, err := scheme.New(gvk)
	if err != nil {
		return Manifest{}, fmt.Errorf("%s: kind %s is not one kubectl-karpenter plans with", what, gvk)
	}
	raw, _ = json.Marshal(generic)
	if err := json.Unmarshal(raw, typed); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", what, err)
	}
	o := typed.(client.Object)
	o.GetObjectKind().SetGroupVersionKind(gvk)
	if o.GetNamespace() == "" && namespaced(gvk) {
		o.SetNamespace(metav1.NamespaceDefault)
	}
	return Manifest{Object: o, Source: src, ConvertedFrom: from}, nil
}

func namespaced(gvk schema.GroupVersionKind) bool {
	switch gvk.Kind {
	case "Node", "Namespace", "PersistentVolume", "StorageClass", "NodePool", "NodeClaim", "KWOKNodeClass", "EC2NodeClass":
		return false
	}
	return true
}

// Apply puts the manifests into the snapshot, as `kubectl apply` would create
// or replace them. NodeClasses are assumed to become Ready (their controller
// resolves them within seconds on KWOK; on AWS that is the assumption to
// check), and NodePools keep the status of the object they replace.
func (s *Snapshot) Apply(ms []Manifest) error {
	for _, m := range ms {
		o := m.Object
		switch t := o.(type) {
		case *v1.NodePool:
			if cur, ok := s.Store.objects[gkNodePool][client.ObjectKeyFromObject(t)]; ok {
				t.Status = cur.(*v1.NodePool).Status
				t.UID = cur.GetUID()
			} else {
				t.UID = types.UID("plan-" + t.Name)
			}
		case *kwokv1alpha1.KWOKNodeClass:
			markReady(t)
		case *awsv1.EC2NodeClass:
			// Its subnets (the zones it launches in) are what the cluster's
			// controller resolved for the object it replaces; a new one has
			// none until that controller runs.
			if cur, ok := s.Store.objects[groupKindOf(s.Store.scheme, t)][client.ObjectKeyFromObject(t)]; ok {
				t.Status = *cur.(*awsv1.EC2NodeClass).Status.DeepCopy()
			} else {
				s.Notes = append(s.Notes, fmt.Sprintf("EC2NodeClass %s is new: its subnets are not resolved, so its instance types have no zone to launch in", t.Name))
			}
			markReady(t)
		case *corev1.Pod:
			if t.Spec.NodeName == "" {
				t.Status.Conditions = append(t.Status.Conditions, unschedulable())
			}
		}
		if err := s.Store.put(o); err != nil {
			return err
		}
		s.Notes = append(s.Notes, fmt.Sprintf("applied %s", m.Describe()))
	}
	return nil
}

func markReady(o status.Object) {
	conds := o.StatusConditions()
	conds.SetTrue(status.ConditionReady)
}

// nodeClassGroups are the NodeClass kinds --node-class accepts.
var nodeClassGroups = map[string]string{
	"KWOKNodeClass": kwokv1alpha1.SchemeGroupVersion.Group,
	"EC2NodeClass":  awsv1.SchemeGroupVersion.Group,
}

// Retarget points every NodePool among the manifests at the NodeClass
// "KIND/NAME", so that converted AWS Provisioners can be planned on a KWOK
// cluster. It returns a note per NodePool changed.
func Retarget(ms []Manifest, ref string) ([]string, error) {
	kind, nm, ok := strings.Cut(ref, "/")
	group, known := nodeClassGroups[kind]
	if !ok || nm == "" || !known {
		return nil, fmt.Errorf("--node-class %q: want KWOKNodeClass/NAME or EC2NodeClass/NAME", ref)
	}
	var notes []string
	for _, m := range ms {
		np, ok := m.Object.(*v1.NodePool)
		if !ok {
			continue
		}
		old := np.Spec.Template.Spec.NodeClassRef
		if old != nil && old.Kind == kind && old.Name == nm {
			continue
		}
		np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: group, Kind: kind, Name: nm}
		was := "none"
		if old != nil {
			was = old.Kind + "/" + old.Name
		}
		notes = append(notes, fmt.Sprintf("nodepool %s: nodeClassRef %s replaced by %s (--node-class)", np.Name, was, ref))
	}
	return notes, nil
}
