package amifamily

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/filters"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/pages"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/ttlcache"
)

// AMI is a resolved image and the requirements of the instance types it
// boots. One image may appear twice with different requirements (the AL2 GPU
// AMI serves NVIDIA and Neuron instance types).
type AMI struct {
	ID             string
	Name           string
	CreationDate   time.Time
	Deprecated     bool
	RootDeviceName string
	// Requirements sorted as upstream writes them to status (shorter keys first).
	Requirements []corev1.NodeSelectorRequirement
}

// Resolution is what amiSelectorTerms resolved to.
type Resolution struct {
	// AMIs: per requirement set the newest non-deprecated image (a deprecated
	// one only when no other matches), newest first.
	AMIs []AMI
	// KubernetesVersion the alias was resolved for ("" without an alias).
	KubernetesVersion string
	// Unmatched are the indices of the terms that matched no image.
	Unmatched []int
	why       map[int]string
	terms     []v1.AMISelectorTerm
}

// UnmatchedMessage names every term that matched nothing and why.
func (r *Resolution) UnmatchedMessage() string {
	return filters.Unmatched("amiSelectorTerms", "AMI", r.Unmatched, func(i int) string {
		m := DescribeTerm(r.terms[i])
		if w := r.why[i]; w != "" {
			m += " (" + w + ")"
		}
		return m
	})
}

// DescribeTerm renders a term for messages.
func DescribeTerm(t v1.AMISelectorTerm) string {
	return filters.Term{}.Field("alias", t.Alias).Field("id", t.ID).Field("ssmParameter", t.SSMParameter).
		Field("name", t.Name).Field("owner", t.Owner).Tags(t.Tags).String()
}

// InputError says the terms cannot resolve as written (an alias the cluster's
// Kubernetes version has no AMIs for, say), as opposed to AWS being
// unreachable. Field names the offending field.
type InputError struct {
	Reason  string
	Field   string
	Message string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Message }

// ReasonAliasUnsupported is the InputError reason of an alias whose family or
// version the cluster cannot use.
const ReasonAliasUnsupported = "AMIAliasUnsupported"

// image is what DescribeImages says about one image.
type image struct {
	id, name, arch, rootDevice string
	created, deprecation       time.Time
}

// Provider resolves amiSelectorTerms.
type Provider struct {
	ec2      *ec2.Client
	ssm      *SSMProvider
	versions *VersionProvider
	clock    clock.PassiveClock
	images   *ttlcache.Cache[[]image]
	pageSize int32
}

// Option adjusts a Provider.
type Option func(*Provider)

// WithPageSize sets DescribeImages MaxResults (6..1000; default 1000).
func WithPageSize(n int32) Option { return func(p *Provider) { p.pageSize = n } }

// NewProvider returns a provider whose DescribeImages answers live for ttl
// (upstream: 1 minute); SSM answers live in ssmProvider's cache (its own ttl).
func NewProvider(ec2api *ec2.Client, ssmProvider *SSMProvider, versions *VersionProvider, clk clock.PassiveClock, ttl time.Duration, opts ...Option) *Provider {
	p := &Provider{ec2: ec2api, ssm: ssmProvider, versions: versions, clock: clk, images: ttlcache.New[[]image](clk, ttl), pageSize: 1000}
	for _, o := range opts {
		o(p)
	}
	return p
}

// imageQuery is one DescribeImages request, the terms it answers and, for
// images found through SSM, the requirement sets each image id is known to serve.
type imageQuery struct {
	filters []ec2types.Filter
	owners  []string
	terms   []int
	// known maps image id -> variants (alias resolution only).
	known  map[string][]Variant
	family *Family
	// termIDs maps a term to the image ids it asked for (id and ssmParameter terms).
	termIDs map[int]string
}

// List resolves the class's amiSelectorTerms. An *InputError means the terms
// cannot work for this cluster; other errors mean AWS could not be asked.
func (p *Provider) List(ctx context.Context, nc *v1.EC2NodeClass) (*Resolution, error) {
	terms := nc.Spec.AMISelectorTerms
	res := &Resolution{terms: terms, why: map[int]string{}}
	var queries []imageQuery
	if i, alias, ok := aliasTerm(terms); ok {
		q, why, err := p.aliasQuery(ctx, i, alias, res)
		if err != nil {
			return nil, err
		}
		if q == nil {
			res.Unmatched, res.why[i] = []int{i}, why
			return res, nil
		}
		queries = append(queries, *q)
	} else {
		var err error
		if queries, err = p.termQueries(ctx, terms, res); err != nil {
			return nil, err
		}
	}
	matched := map[int]bool{}
	best := map[string]AMI{}
	for _, q := range queries {
		imgs, err := p.describe(ctx, q.filters, q.owners)
		if err != nil {
			return nil, fmt.Errorf("describing images for %s: %w", filters.TermNames("amiSelectorTerms", q.terms), err)
		}
		for _, i := range q.terms {
			if id, ok := q.termIDs[i]; ok {
				matched[i] = containsImage(imgs, id)
				if !matched[i] && res.why[i] == "" && terms[i].SSMParameter != "" {
					res.why[i] = fmt.Sprintf("the parameter holds %q, which is not an available image", id)
				}
			} else {
				matched[i] = len(imgs) > 0
			}
		}
		for _, img := range imgs {
			arch, ok := kubeArch(img.arch)
			if !ok {
				continue // i386 and mac images cannot run nodes
			}
			archReq := corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}
			var reqSets [][]corev1.NodeSelectorRequirement
			if variants, ok := q.known[img.id]; ok {
				for _, v := range variants {
					reqSets = append(reqSets, append([]corev1.NodeSelectorRequirement{archReq}, v.Requirements(q.family)...))
				}
			} else if q.known != nil {
				continue // an alias query only accepts the ids SSM named
			} else {
				reqSets = [][]corev1.NodeSelectorRequirement{{archReq}}
			}
			for _, reqs := range reqSets {
				sortRequirements(reqs)
				cand := AMI{
					ID: img.id, Name: img.name, CreationDate: img.created, RootDeviceName: img.rootDevice,
					Deprecated:   !img.deprecation.IsZero() && !p.clock.Now().Before(img.deprecation),
					Requirements: reqs,
				}
				k := requirementsKey(reqs)
				if cur, ok := best[k]; !ok || better(cand, cur) {
					best[k] = cand
				}
			}
		}
	}
	for i := range terms {
		if !matched[i] {
			res.Unmatched = append(res.Unmatched, i)
		}
	}
	for _, a := range best {
		res.AMIs = append(res.AMIs, a)
	}
	sort.Slice(res.AMIs, func(i, j int) bool {
		a, b := res.AMIs[i], res.AMIs[j]
		if !a.CreationDate.Equal(b.CreationDate) {
			return a.CreationDate.After(b.CreationDate)
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return requirementsKey(a.Requirements) < requirementsKey(b.Requirements)
	})
	return res, nil
}

func aliasTerm(terms []v1.AMISelectorTerm) (int, v1.Alias, bool) {
	for i, t := range terms {
		if t.Alias == "" {
			continue
		}
		a, ok := v1.ParseAlias(t.Alias)
		if !ok {
			a = v1.Alias{Family: t.Alias}
		}
		return i, a, true
	}
	return 0, v1.Alias{}, false
}

// aliasQuery resolves an alias through SSM. It returns a nil query and the
// reason when no parameter of the alias exists.
func (p *Provider) aliasQuery(ctx context.Context, i int, alias v1.Alias, res *Resolution) (*imageQuery, string, error) {
	field := fmt.Sprintf("amiSelectorTerms[%d].alias", i)
	if alias.Version == "" {
		return nil, "", &InputError{Reason: ReasonAliasUnsupported, Field: field, Message: fmt.Sprintf("%q is not in the form family@version", alias.Family)}
	}
	k8s, err := p.versions.Get(ctx)
	if err != nil {
		return nil, "", err
	}
	res.KubernetesVersion = k8s
	family, err := CheckAlias(alias, k8s)
	if err != nil {
		return nil, "", &InputError{Reason: ReasonAliasUnsupported, Field: field, Message: fmt.Sprintf("%q: %s", alias.String(), err)}
	}
	known := map[string][]Variant{}
	var missing []string
	for _, param := range family.Parameters(k8s, alias.Version) {
		id, err := p.ssm.Get(ctx, param.Path)
		if err != nil {
			if awserr.IsNotFound(err) {
				missing = append(missing, param.Path)
				continue
			}
			return nil, "", fmt.Errorf("reading SSM parameter %s for %s: %w", param.Path, field, err)
		}
		known[id] = append(known[id], param.Variants...)
	}
	if len(known) == 0 {
		why := fmt.Sprintf("no SSM parameter of version %q exists for Kubernetes %s", alias.Version, k8s)
		if len(missing) > 0 {
			why += fmt.Sprintf(", e.g. %s", missing[0])
		}
		return nil, why, nil
	}
	ids := make([]string, 0, len(known))
	for id := range known {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return &imageQuery{
		filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: ids}},
		terms:   []int{i},
		known:   known,
		family:  family,
	}, "", nil
}

// termQueries builds the DescribeImages requests of non-alias terms: ids and
// ssmParameter values in one image-id request, every name/owner/tags term in
// one of its own.
func (p *Provider) termQueries(ctx context.Context, terms []v1.AMISelectorTerm, res *Resolution) ([]imageQuery, error) {
	var out []imageQuery
	idq := imageQuery{termIDs: map[int]string{}}
	var ids []string
	for i, t := range terms {
		switch {
		case t.ID != "":
			ids = append(ids, t.ID)
			idq.terms = append(idq.terms, i)
			idq.termIDs[i] = t.ID
		case t.SSMParameter != "":
			id, err := p.ssm.Get(ctx, t.SSMParameter)
			if err != nil {
				if awserr.IsNotFound(err) {
					res.why[i] = "the SSM parameter does not exist"
					idq.terms = append(idq.terms, i)
					idq.termIDs[i] = ""
					continue
				}
				return nil, fmt.Errorf("reading SSM parameter %q of amiSelectorTerms[%d].ssmParameter: %w", t.SSMParameter, i, err)
			}
			ids = append(ids, id)
			idq.terms = append(idq.terms, i)
			idq.termIDs[i] = id
		case t.Name != "" || t.Owner != "" || len(t.Tags) > 0:
			q := imageQuery{terms: []int{i}, filters: filters.Tags(t.Tags)}
			if t.Name != "" {
				q.filters = append([]ec2types.Filter{{Name: aws.String("name"), Values: []string{t.Name}}}, q.filters...)
			}
			switch {
			case t.Owner != "":
				q.owners = []string{t.Owner}
			case t.Name != "":
				// A name alone would also match images anyone shared
				// publicly; as upstream, only the account's own and
				// Amazon's count unless an owner says otherwise.
				q.owners = []string{"self", "amazon"}
			}
			out = append(out, q)
		}
	}
	if len(idq.terms) > 0 {
		// With only missing SSM parameters there is nothing to ask EC2; List
		// reports those terms unmatched.
		if len(ids) > 0 {
			sort.Strings(ids)
			idq.filters = []ec2types.Filter{{Name: aws.String("image-id"), Values: filters.Uniq(ids)}}
			out = append(out, idq)
		}
	}
	return out, nil
}

func (p *Provider) describe(ctx context.Context, fs []ec2types.Filter, owners []string) ([]image, error) {
	fs = append(append([]ec2types.Filter(nil), fs...), ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.ImageStateAvailable)}})
	return p.images.Load(filters.Key(fs, owners...), func() ([]image, error) {
		return pages.Collect(ctx, ec2.NewDescribeImagesPaginator(p.ec2, &ec2.DescribeImagesInput{
			Filters:           fs,
			Owners:            owners,
			IncludeDeprecated: aws.Bool(true),
			MaxResults:        aws.Int32(p.pageSize),
		}), func(acc []image, page *ec2.DescribeImagesOutput) []image {
			for _, img := range page.Images {
				acc = append(acc, image{
					id: aws.ToString(img.ImageId), name: aws.ToString(img.Name), arch: string(img.Architecture),
					rootDevice:  aws.ToString(img.RootDeviceName),
					created:     parseTime(aws.ToString(img.CreationDate)),
					deprecation: parseTime(aws.ToString(img.DeprecationTime)),
				})
			}
			return acc
		})
	})
}

// Invalidate forgets cached images and SSM parameters.
func (p *Provider) Invalidate() {
	p.images.Flush()
	p.ssm.Invalidate()
}

// better reports whether a should be used instead of b for the same
// requirements: not deprecated beats deprecated, then newer, then the lower id.
func better(a, b AMI) bool {
	if a.Deprecated != b.Deprecated {
		return !a.Deprecated
	}
	if !a.CreationDate.Equal(b.CreationDate) {
		return a.CreationDate.After(b.CreationDate)
	}
	return a.ID < b.ID
}

func kubeArch(ec2Arch string) (string, bool) {
	switch ec2Arch {
	case "x86_64":
		return "amd64", true
	case "arm64":
		return "arm64", true
	}
	return "", false
}

func sortRequirements(reqs []corev1.NodeSelectorRequirement) {
	sort.SliceStable(reqs, func(i, j int) bool {
		if len(reqs[i].Key) != len(reqs[j].Key) {
			return len(reqs[i].Key) < len(reqs[j].Key)
		}
		return reqs[i].Key < reqs[j].Key
	})
}

func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(r.Key)
		b.WriteByte(' ')
		b.WriteString(string(r.Operator))
		b.WriteByte(' ')
		b.WriteString(strings.Join(r.Values, ","))
		b.WriteByte(';')
	}
	return b.String()
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func containsImage(imgs []image, id string) bool {
	for _, i := range imgs {
		if i.id == id {
			return true
		}
	}
	return false
}
