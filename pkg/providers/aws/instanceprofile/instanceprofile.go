package instanceprofile

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/pages"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/ttlcache"
)

// TTL is upstream's lifetime of an instance profile existence answer.
const TTL = 15 * time.Minute

// RoleNotFoundError: spec.role names no IAM role.
type RoleNotFoundError struct {
	Role string
	Err  error
}

func (e *RoleNotFoundError) Error() string {
	return fmt.Sprintf("spec.role %q: the IAM role does not exist (%s)", e.Role, awserr.Message(e.Err))
}

func (e *RoleNotFoundError) Unwrap() error { return e.Err }

// NotFoundError: spec.instanceProfile names no instance profile.
type NotFoundError struct {
	Name string
	Err  error
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("spec.instanceProfile %q: the instance profile does not exist (%s)", e.Name, awserr.Message(e.Err))
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// Provider creates, finds and deletes instance profiles.
type Provider struct {
	iam         *iam.Client
	region      string
	clusterName string
	profiles    *ttlcache.Cache[*iamtypes.InstanceProfile]
	newUUID     func() string
	clk         clock.PassiveClock

	mu sync.Mutex
	// unused maps a managed profile that no longer serves its class to
	// when garbage collection first found it unused.
	unused map[string]time.Time
	// collected is, per class UID, the last collection that found no
	// profile but the current one; it is not repeated within TTL while the
	// current profile stays the same.
	collected map[string]collection
}

type collection struct {
	at      time.Time
	current string
}

// UnusedGracePeriod is how long a managed profile that its class no
// longer names, and that no NodeClaim records, is kept before it is
// deleted: a launch that read the class's old status may still be on its
// way to recording the profile on its NodeClaim.
const UnusedGracePeriod = 5 * time.Minute

// NewProvider returns a provider for the cluster in region.
func NewProvider(iamapi *iam.Client, region, clusterName string, clk clock.PassiveClock) *Provider {
	return &Provider{
		iam: iamapi, region: region, clusterName: clusterName,
		profiles:  ttlcache.New[*iamtypes.InstanceProfile](clk, TTL),
		newUUID:   func() string { return string(uuid.NewUUID()) },
		clk:       clk,
		unused:    map[string]time.Time{},
		collected: map[string]collection{},
	}
}

// Path is the IAM path of the profiles Karpenter creates for nc.
func (p *Provider) Path(nc *v1.EC2NodeClass) string {
	return fmt.Sprintf("/karpenter/%s/%s/%s/", p.region, p.clusterName, nc.UID)
}

// NewName returns a fresh profile name for nc: <cluster>_<64-bit hash>.
func (p *Provider) NewName(nc *v1.EC2NodeClass) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(p.region + nc.Name + p.newUUID()))
	return fmt.Sprintf("%s_%d", p.clusterName, h.Sum64())
}

// Tags are the tags of nc's managed profile.
func (p *Provider) Tags(nc *v1.EC2NodeClass) map[string]string {
	out := make(map[string]string, len(nc.Spec.Tags)+4)
	for k, v := range nc.Spec.Tags {
		out[k] = v
	}
	out[v1.TagClusterPrefix+p.clusterName] = "owned"
	out[v1.TagEKSClusterName] = p.clusterName
	out[v1.TagEC2NodeClass] = nc.Name
	out[corev1.LabelTopologyRegion] = p.region
	return out
}

// RoleName is the IAM role name of spec.role: a role given with a path
// (path/to/Name) is added to a profile by its name alone.
func RoleName(role string) string {
	if i := strings.LastIndex(role, "/"); i >= 0 {
		return role[i+1:]
	}
	return role
}

// Ensure makes sure nc's managed profile exists, holds spec.role and carries
// the tags, and returns its name. It reuses the profile named in
// status.instanceProfile, or any profile under the class's path, that holds
// the role (or no role at all) before creating one. When spec.role changed,
// a new profile is created for the new role, as upstream does: the nodes
// running with the old profile keep their role, and the old profile is
// deleted by GarbageCollect once no NodeClaim uses it. A missing role gives
// *RoleNotFoundError and creates nothing.
func (p *Provider) Ensure(ctx context.Context, nc *v1.EC2NodeClass) (string, error) {
	role := RoleName(nc.Spec.Role)
	if name := nc.Status.InstanceProfile; name != "" {
		if ip, ok := p.profiles.Get(name); ok && hasRole(ip, role) && p.owns(nc, ip) {
			return name, nil
		}
	}
	if _, err := p.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); err != nil {
		if awserr.IsNotFound(err) {
			return "", &RoleNotFoundError{Role: nc.Spec.Role, Err: err}
		}
		return "", fmt.Errorf("getting IAM role %q of spec.role: %w", role, err)
	}
	ip, err := p.find(ctx, nc, role)
	if err != nil {
		return "", err
	}
	if ip == nil {
		// No profile of the class holds the role: a new class, or a new
		// role. A profile holding another role is left to the nodes using it.
		name := p.NewName(nc)
		out, err := p.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name),
			Path:                aws.String(p.Path(nc)),
			Tags:                iamTags(p.Tags(nc)),
		})
		if err != nil {
			return "", fmt.Errorf("creating instance profile %q for spec.role %q: %w", name, nc.Spec.Role, err)
		}
		ip = out.InstanceProfile
	} else if err := p.tag(ctx, nc, ip); err != nil {
		return "", err
	}
	if err := p.ensureRole(ctx, nc, ip, role); err != nil {
		return "", err
	}
	ip.Roles = []iamtypes.Role{{RoleName: aws.String(role)}}
	p.profiles.Set(aws.ToString(ip.InstanceProfileName), ip)
	return aws.ToString(ip.InstanceProfileName), nil
}

// find returns the class's existing managed profile that holds role, or
// else holds no role; nil when there is none. The one in status is
// preferred.
func (p *Provider) find(ctx context.Context, nc *v1.EC2NodeClass, role string) (*iamtypes.InstanceProfile, error) {
	usable := func(ip *iamtypes.InstanceProfile) bool { return len(ip.Roles) == 0 || hasRole(ip, role) }
	if name := nc.Status.InstanceProfile; name != "" {
		out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
		switch {
		case err == nil && p.owns(nc, out.InstanceProfile) && usable(out.InstanceProfile):
			return out.InstanceProfile, nil
		case err != nil && !awserr.IsNotFound(err):
			return nil, fmt.Errorf("getting instance profile %q: %w", name, err)
		}
	}
	profiles, err := p.list(ctx, p.Path(nc))
	if err != nil {
		return nil, err
	}
	// Several profiles under one class's path arise when the role changed
	// (the old ones wait for garbage collection) or a status write was
	// lost; take one holding the role, else one without a role, else none.
	sort.Slice(profiles, func(i, j int) bool {
		a, b := hasRole(&profiles[i], role), hasRole(&profiles[j], role)
		if a != b {
			return a
		}
		return aws.ToString(profiles[i].InstanceProfileName) < aws.ToString(profiles[j].InstanceProfileName)
	})
	for i := range profiles {
		if usable(&profiles[i]) {
			return &profiles[i], nil
		}
	}
	return nil, nil
}

// GarbageCollect deletes the managed profiles under nc's path that are
// not current (the profile nc now uses, "" when none) and that no NodeClaim
// records in inUse, once they have been found unused for
// UnusedGracePeriod. It returns the names it deleted and whether unused
// profiles are still waiting out the grace period.
func (p *Provider) GarbageCollect(ctx context.Context, nc *v1.EC2NodeClass, current string, inUse map[string]bool) ([]string, bool, error) {
	now := p.clk.Now()
	key := string(nc.UID)
	p.mu.Lock()
	last, ok := p.collected[key]
	p.mu.Unlock()
	if ok && last.current == current && now.Sub(last.at) < TTL {
		return nil, false, nil
	}
	profiles, err := p.list(ctx, p.Path(nc))
	if err != nil {
		return nil, false, err
	}
	var deleted []string
	waiting, others := false, false
	var errs []error
	for i := range profiles {
		name := aws.ToString(profiles[i].InstanceProfileName)
		if name == current {
			continue
		}
		others = true
		p.mu.Lock()
		if inUse[name] {
			delete(p.unused, name)
			p.mu.Unlock()
			continue
		}
		since, seen := p.unused[name]
		if !seen {
			p.unused[name] = now
		}
		p.mu.Unlock()
		if !seen || now.Sub(since) < UnusedGracePeriod {
			waiting = true
			continue
		}
		if err := p.delete(ctx, &profiles[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		p.mu.Lock()
		delete(p.unused, name)
		p.mu.Unlock()
		deleted = append(deleted, name)
	}
	p.mu.Lock()
	if others && (waiting || len(errs) > 0 || len(deleted) < countOthers(profiles, current)) {
		// Profiles remain to collect (in use or waiting): look again on
		// every call.
		delete(p.collected, key)
	} else {
		p.collected[key] = collection{at: now, current: current}
	}
	p.mu.Unlock()
	return deleted, waiting, errors.Join(errs...)
}

func countOthers(profiles []iamtypes.InstanceProfile, current string) int {
	n := 0
	for i := range profiles {
		if aws.ToString(profiles[i].InstanceProfileName) != current {
			n++
		}
	}
	return n
}

// owns reports whether ip is a profile Karpenter manages for nc.
func (p *Provider) owns(nc *v1.EC2NodeClass, ip *iamtypes.InstanceProfile) bool {
	if aws.ToString(ip.Path) == p.Path(nc) {
		return true
	}
	tags := map[string]string{}
	for _, t := range ip.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return tags[v1.TagEC2NodeClass] == nc.Name && tags[v1.TagClusterPrefix+p.clusterName] == "owned"
}

func (p *Provider) ensureRole(ctx context.Context, nc *v1.EC2NodeClass, ip *iamtypes.InstanceProfile, role string) error {
	name := aws.ToString(ip.InstanceProfileName)
	if hasRole(ip, role) {
		return nil
	}
	// A profile holds at most one role: replace whatever it holds.
	for _, r := range ip.Roles {
		if _, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil && !awserr.IsNotFound(err) {
			return fmt.Errorf("removing role %q from instance profile %q: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)}); err != nil {
		if awserr.IsNotFound(err) && strings.Contains(strings.ToLower(awserr.Message(err)), "role") {
			return &RoleNotFoundError{Role: nc.Spec.Role, Err: err}
		}
		return fmt.Errorf("adding role %q to instance profile %q: %w", role, name, err)
	}
	return nil
}

// tag adds missing or changed tags to an existing profile.
func (p *Provider) tag(ctx context.Context, nc *v1.EC2NodeClass, ip *iamtypes.InstanceProfile) error {
	have := map[string]string{}
	for _, t := range ip.Tags {
		have[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	want := p.Tags(nc)
	missing := map[string]string{}
	for k, v := range want {
		if have[k] != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return nil
	}
	name := aws.ToString(ip.InstanceProfileName)
	if _, err := p.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: iamTags(missing)}); err != nil {
		return fmt.Errorf("tagging instance profile %q: %w", name, err)
	}
	ip.Tags = iamTags(mergeTags(have, missing))
	return nil
}

// Get checks that the profile exists (spec.instanceProfile). A missing one
// gives *NotFoundError.
func (p *Provider) Get(ctx context.Context, name string) (*iamtypes.InstanceProfile, error) {
	if ip, ok := p.profiles.Get(name); ok {
		return ip, nil
	}
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		if awserr.IsNotFound(err) {
			return nil, &NotFoundError{Name: name, Err: err}
		}
		return nil, fmt.Errorf("getting instance profile %q of spec.instanceProfile: %w", name, err)
	}
	p.profiles.Set(name, out.InstanceProfile)
	return out.InstanceProfile, nil
}

// DeleteAll removes the role from and deletes every profile Karpenter made
// for nc (those under its path, and the one in status when it carries the
// class's tags). Already-deleted profiles are not an error.
func (p *Provider) DeleteAll(ctx context.Context, nc *v1.EC2NodeClass) error {
	p.mu.Lock()
	delete(p.collected, string(nc.UID))
	p.mu.Unlock()
	profiles, err := p.list(ctx, p.Path(nc))
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for i := range profiles {
		names[aws.ToString(profiles[i].InstanceProfileName)] = true
	}
	if s := nc.Status.InstanceProfile; s != "" && nc.Spec.Role != "" && !names[s] {
		out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(s)})
		switch {
		case err == nil && p.owns(nc, out.InstanceProfile):
			profiles = append(profiles, *out.InstanceProfile)
		case err != nil && !awserr.IsNotFound(err):
			return fmt.Errorf("getting instance profile %q: %w", s, err)
		}
	}
	var errs []error
	for i := range profiles {
		errs = append(errs, p.delete(ctx, &profiles[i]))
	}
	return errors.Join(errs...)
}

func (p *Provider) delete(ctx context.Context, ip *iamtypes.InstanceProfile) error {
	name := aws.ToString(ip.InstanceProfileName)
	for _, r := range ip.Roles {
		if _, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil && !awserr.IsNotFound(err) {
			return fmt.Errorf("removing role %q from instance profile %q: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !awserr.IsNotFound(err) {
		return fmt.Errorf("deleting instance profile %q: %w", name, err)
	}
	p.profiles.Delete(name)
	return nil
}

func (p *Provider) list(ctx context.Context, path string) ([]iamtypes.InstanceProfile, error) {
	out, err := pages.Collect(ctx, iam.NewListInstanceProfilesPaginator(p.iam, &iam.ListInstanceProfilesInput{PathPrefix: aws.String(path)}),
		func(acc []iamtypes.InstanceProfile, page *iam.ListInstanceProfilesOutput) []iamtypes.InstanceProfile {
			return append(acc, page.InstanceProfiles...)
		})
	if err != nil {
		return nil, fmt.Errorf("listing instance profiles under %s: %w", path, err)
	}
	return out, nil
}

func hasRole(ip *iamtypes.InstanceProfile, role string) bool {
	return len(ip.Roles) == 1 && aws.ToString(ip.Roles[0].RoleName) == role
}

func iamTags(m map[string]string) []iamtypes.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]iamtypes.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func mergeTags(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
