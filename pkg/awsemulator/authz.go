package awsemulator

import (
	"fmt"
	"strings"
	"sync"
)

// IAM enforcement. With a policy set (SetPolicy), every signed request is authorized
// before its handler runs, as AWS does: the call is turned into the authorization
// requests AWS makes for it (authz_ec2.go, authz_services.go: the action on each
// resource it reads or creates, tagging on create, iam:PassRole for the instance
// profile's role) with the condition context AWS supplies (aws:RequestTag/*,
// aws:ResourceTag/*, aws:TagKeys, aws:RequestedRegion, ec2:CreateAction,
// iam:PassedToService); all of them must be allowed. A denied call answers the
// service's authorization error and is recorded in Denials(). Dry runs are authorized
// the same way, so a DryRun answers DryRunOperation only when the real call would be
// allowed.

// Denial is one call the policy refused.
type Denial struct {
	Service    string // "ec2", "iam", ...
	Action     string // the API operation called, e.g. "CreateFleet"
	Permission string // the IAM action that was refused, e.g. "ec2:CreateTags"
	Resource   string // the ARN it was refused on
	Reason     string // the error message answered plus why no statement applied
}

func (d Denial) String() string {
	return fmt.Sprintf("%s:%s denied %s on %s: %s", d.Service, d.Action, d.Permission, d.Resource, d.Reason)
}

// authz is the emulator's enforcement state.
type authz struct {
	mu      sync.Mutex
	policy  *Policy // nil: allow everything (the default)
	denials []Denial
}

// SetPolicy makes doc the identity policy of the emulator's access key and enforces it
// from the next request on; "" lifts enforcement (everything allowed, the default).
// Placeholders must be rendered first (RenderPolicy); errors name the statement and field.
func (e *Emulator) SetPolicy(doc string) error {
	var p *Policy
	if strings.TrimSpace(doc) != "" {
		var err error
		if p, err = ParsePolicy(doc); err != nil {
			return err
		}
	}
	e.authz.mu.Lock()
	defer e.authz.mu.Unlock()
	e.authz.policy = p
	return nil
}

// Denials returns every call refused by the policy so far, in order.
func (e *Emulator) Denials() []Denial {
	e.authz.mu.Lock()
	defer e.authz.mu.Unlock()
	return append([]Denial(nil), e.authz.denials...)
}

// ResetDenials forgets the recorded denials.
func (e *Emulator) ResetDenials() {
	e.authz.mu.Lock()
	defer e.authz.mu.Unlock()
	e.authz.denials = nil
}

// principalARN is the identity the emulator's access key stands for.
func (e *Emulator) principalARN() string {
	return "arn:aws:iam::" + e.opts.AccountID + ":user/emulator"
}

// authorize runs the policy on a call; nil when allowed (or no policy is set).
func (e *Emulator) authorize(c *call) *apiError {
	e.authz.mu.Lock()
	p := e.authz.policy
	e.authz.mu.Unlock()
	if p == nil {
		return nil
	}
	var reqs []authzRequest
	e.locked(func(s *state) { reqs = authzRequests(c, s) })
	seen := map[string]bool{}
	for _, r := range reqs {
		key := r.Action + " " + r.Resource + " " + sortedContext(r.Context)
		if seen[key] {
			continue
		}
		seen[key] = true
		d := p.evaluate(r)
		if d.Allowed {
			continue
		}
		apiErr := e.denialError(c, r, d)
		why := "no statement allows " + r.Action + " on " + r.Resource
		if d.ExplicitDeny != "" {
			why = "explicitly denied by statement " + d.ExplicitDeny
		} else if len(d.Unmet) > 0 {
			why = "statements matching action and resource did not apply: " + strings.Join(d.Unmet, "; ")
		}
		e.authz.mu.Lock()
		e.authz.denials = append(e.authz.denials, Denial{
			Service: c.svc.name, Action: c.action, Permission: r.Action, Resource: r.Resource,
			Reason: apiErr.Message + " [" + why + "; context: " + sortedContext(r.Context) + "]",
		})
		e.authz.mu.Unlock()
		return apiErr
	}
	return nil
}

// denialError is the error AWS answers for a refused request, in the service's shape.
func (e *Emulator) denialError(c *call, r authzRequest, d authzDecision) *apiError {
	because := "because no identity-based policy allows the " + r.Action + " action"
	if d.ExplicitDeny != "" {
		because = "with an explicit deny in an identity-based policy"
	}
	msg := fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s %s", e.principalARN(), r.Action, r.Resource, because)
	switch c.svc.protocol {
	case protoEC2Query:
		return errorf(403, "UnauthorizedOperation", "You are not authorized to perform this operation. %s", msg)
	case protoAWSQuery:
		return errorf(403, "AccessDenied", "%s", msg)
	case protoRESTJSON:
		return errorf(403, "AccessDeniedException", "%s", msg)
	default:
		if c.svc.name == "sqs" {
			return &apiError{Status: 403, Code: "AccessDenied", Message: msg, QueryCode: "AccessDenied"}
		}
		return errorf(400, "AccessDeniedException", "%s", msg)
	}
}

// authzRequests turns a call into the authorization requests AWS makes for it.
// Called with the state locked (resource tags, profiles' roles).
func authzRequests(c *call, s *state) []authzRequest {
	region := c.e.opts.Region
	switch c.svc.name {
	case "ec2":
		return ec2AuthzRequests(c, s)
	case "iam":
		return iamAuthzRequests(c, s)
	case "ssm":
		return ssmAuthzRequests(c, s)
	case "sqs":
		return sqsAuthzRequests(c)
	case "eks":
		return eksAuthzRequests(c)
	case "arc-zonal-shift":
		return arcAuthzRequests(c, s)
	case "pricing":
		region = credentialRegion(c)
	}
	return []authzRequest{{Action: c.svc.name + ":" + c.action, Resource: "*", Context: baseContext(region)}}
}

// baseContext holds the global keys every request carries.
func baseContext(region string) map[string][]string {
	return map[string][]string{"aws:requestedregion": {region}}
}

// credentialRegion is the region the request was signed for (global and
// few-region services: the region the client called).
func credentialRegion(c *call) string {
	auth := c.r.Header.Get("Authorization")
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return c.e.opts.Region
	}
	parts := strings.Split(strings.SplitN(rest, ",", 2)[0], "/")
	if len(parts) >= 3 {
		return parts[2]
	}
	return c.e.opts.Region
}

// withTags adds aws:RequestTag/<k> (and aws:TagKeys) or aws:ResourceTag/<k> entries.
func withRequestTags(ctx map[string][]string, tags map[string]string) map[string][]string {
	if len(tags) == 0 {
		return ctx
	}
	keys := sortedKeys(tags)
	for _, k := range keys {
		ctx["aws:requesttag/"+strings.ToLower(k)] = []string{tags[k]}
	}
	ctx["aws:tagkeys"] = keys
	return ctx
}

func withResourceTags(ctx map[string][]string, tags map[string]string) map[string][]string {
	for k, v := range tags {
		ctx["aws:resourcetag/"+strings.ToLower(k)] = []string{v}
	}
	return ctx
}

func cloneContext(ctx map[string][]string) map[string][]string {
	out := make(map[string][]string, len(ctx)+8)
	for k, v := range ctx {
		out[k] = v
	}
	return out
}
