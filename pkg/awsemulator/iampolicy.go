package awsemulator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// This file is an IAM identity-policy evaluator: parse a policy document, then decide
// one authorization request (action, resource ARN, condition context) the way IAM's
// evaluation logic does for a single identity policy: an explicit Deny wins, else an
// Allow is needed, else the request is implicitly denied. It knows nothing about the
// emulator's state; authz*.go build the requests.

// Policy is a parsed identity policy.
type Policy struct {
	Statements []Statement
}

// Statement is one policy statement. Exactly one of Action/NotAction and one of
// Resource/NotResource is set; patterns keep IAM's wildcards * and ?.
type Statement struct {
	Sid         string
	Effect      string // Allow | Deny
	Action      []string
	NotAction   []string
	Resource    []string
	NotResource []string
	Conditions  []Condition
}

// Condition is one (operator, key, values) triple of a Condition block.
type Condition struct {
	Operator string // as written, e.g. "ForAllValues:StringEquals", "StringEqualsIfExists"
	Key      string
	Values   []string

	base      string // operator without qualifier and IfExists, e.g. "StringEquals"
	qualifier string // "", "ForAllValues" or "ForAnyValue"
	ifExists  bool
}

// authzRequest is what IAM decides: may the caller perform action on resource, given
// the condition context (keys lower-cased; every key may carry several values)?
type authzRequest struct {
	Action   string // "ec2:CreateFleet"
	Resource string // ARN or "*"
	Context  map[string][]string
}

// authzDecision is the outcome for one request.
type authzDecision struct {
	Allowed      bool
	ExplicitDeny string   // Sid (or "#index") of the Deny statement that matched
	Unmet        []string // why Allow statements that matched action and resource did not apply
}

// conditionOperators are the operators this evaluator implements (before IfExists and
// ForAllValues/ForAnyValue are taken off).
var conditionOperators = map[string]bool{
	"StringEquals": true, "StringNotEquals": true, "StringEqualsIgnoreCase": true, "StringNotEqualsIgnoreCase": true,
	"StringLike": true, "StringNotLike": true,
	"ArnEquals": true, "ArnNotEquals": true, "ArnLike": true, "ArnNotLike": true,
	"Bool": true, "Null": true,
}

// negated operators match when no policy value matches, and an absent key satisfies them.
var negatedOperators = map[string]bool{
	"StringNotEquals": true, "StringNotEqualsIgnoreCase": true, "StringNotLike": true, "ArnNotEquals": true, "ArnNotLike": true,
}

// iamPolicyVariable matches the ${...} forms IAM itself substitutes; anything else in
// ${...} is an unrendered template placeholder.
var placeholderPattern = regexp.MustCompile(`\$\{([^}]*)\}`)

// ParsePolicy parses and validates an identity policy document. Errors name the
// statement (Sid or index) and the field.
func ParsePolicy(doc string) (*Policy, error) {
	var raw struct {
		Version   string
		Statement json.RawMessage
	}
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		return nil, fmt.Errorf("policy is not valid JSON: %w", err)
	}
	if m := placeholderPattern.FindStringSubmatch(doc); m != nil && !isIAMVariable(m[1]) {
		return nil, fmt.Errorf("policy contains the unrendered placeholder %s (render it first, e.g. with RenderPolicy)", m[0])
	}
	if raw.Version != "" && raw.Version != "2012-10-17" && raw.Version != "2008-10-17" {
		return nil, fmt.Errorf("policy Version %q is not 2012-10-17 or 2008-10-17", raw.Version)
	}
	var stmts []map[string]json.RawMessage
	if len(raw.Statement) == 0 {
		return nil, fmt.Errorf("policy has no Statement")
	}
	if raw.Statement[0] == '{' {
		var one map[string]json.RawMessage
		if err := json.Unmarshal(raw.Statement, &one); err != nil {
			return nil, fmt.Errorf("Statement: %w", err)
		}
		stmts = append(stmts, one)
	} else if err := json.Unmarshal(raw.Statement, &stmts); err != nil {
		return nil, fmt.Errorf("Statement must be an object or a list of objects: %w", err)
	}
	p := &Policy{}
	for i, m := range stmts {
		s, err := parseStatement(m)
		if err != nil {
			name := fmt.Sprintf("Statement[%d]", i)
			if s.Sid != "" {
				name += " (" + s.Sid + ")"
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p.Statements = append(p.Statements, s)
	}
	return p, nil
}

func isIAMVariable(name string) bool {
	return name == "*" || name == "?" || name == "$" || strings.Contains(name, ":")
}

func parseStatement(m map[string]json.RawMessage) (Statement, error) {
	var s Statement
	if v, ok := m["Sid"]; ok {
		if err := json.Unmarshal(v, &s.Sid); err != nil {
			return s, fmt.Errorf("Sid must be a string")
		}
	}
	for k := range m {
		switch k {
		case "Sid", "Effect", "Action", "NotAction", "Resource", "NotResource", "Condition":
		case "Principal", "NotPrincipal":
			return s, fmt.Errorf("%s is not allowed in an identity-based policy", k)
		default:
			return s, fmt.Errorf("unknown field %q", k)
		}
	}
	if err := json.Unmarshal(m["Effect"], &s.Effect); err != nil || (s.Effect != "Allow" && s.Effect != "Deny") {
		return s, fmt.Errorf("Effect must be \"Allow\" or \"Deny\"")
	}
	var err error
	if s.Action, s.NotAction, err = exclusiveLists(m, "Action", "NotAction"); err != nil {
		return s, err
	}
	for _, a := range append(append([]string(nil), s.Action...), s.NotAction...) {
		if a != "*" && !strings.Contains(a, ":") {
			return s, fmt.Errorf("action %q is not of the form service:Action", a)
		}
	}
	if s.Resource, s.NotResource, err = exclusiveLists(m, "Resource", "NotResource"); err != nil {
		return s, err
	}
	if raw, ok := m["Condition"]; ok {
		var block map[string]map[string]json.RawMessage
		if err := json.Unmarshal(raw, &block); err != nil {
			return s, fmt.Errorf("Condition must map operators to {key: value(s)}: %w", err)
		}
		for _, op := range sortedKeys(block) {
			c := Condition{Operator: op}
			rest := op
			if q, r, ok := strings.Cut(op, ":"); ok {
				if q != "ForAllValues" && q != "ForAnyValue" {
					return s, fmt.Errorf("Condition: unknown set operator qualifier %q in %q", q, op)
				}
				c.qualifier, rest = q, r
			}
			if b, ok := strings.CutSuffix(rest, "IfExists"); ok && rest != "Null" {
				c.ifExists, rest = true, b
			}
			if !conditionOperators[rest] {
				return s, fmt.Errorf("Condition: operator %q is not supported (known: %s)", op, strings.Join(sortedKeys(conditionOperators), ", "))
			}
			c.base = rest
			for _, key := range sortedKeys(block[op]) {
				vals, err := stringValues(block[op][key])
				if err != nil {
					return s, fmt.Errorf("Condition %s %s: %w", op, key, err)
				}
				cc := c
				cc.Key, cc.Values = key, vals
				s.Conditions = append(s.Conditions, cc)
			}
		}
	}
	return s, nil
}

// exclusiveLists reads exactly one of two list-or-string fields.
func exclusiveLists(m map[string]json.RawMessage, a, b string) ([]string, []string, error) {
	ra, okA := m[a]
	rb, okB := m[b]
	switch {
	case okA && okB:
		return nil, nil, fmt.Errorf("%s and %s are mutually exclusive", a, b)
	case !okA && !okB:
		return nil, nil, fmt.Errorf("one of %s or %s is required", a, b)
	case okA:
		v, err := stringValues(ra)
		if err != nil || len(v) == 0 {
			return nil, nil, fmt.Errorf("%s must be a non-empty string or list of strings", a)
		}
		return v, nil, nil
	default:
		v, err := stringValues(rb)
		if err != nil || len(v) == 0 {
			return nil, nil, fmt.Errorf("%s must be a non-empty string or list of strings", b)
		}
		return nil, v, nil
	}
}

// stringValues accepts a string, bool, number or a list of them (IAM compares as strings).
func stringValues(raw json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
	} else {
		list = []json.RawMessage{raw}
	}
	out := make([]string, 0, len(list))
	for _, r := range list {
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case bool, float64:
			out = append(out, strings.TrimSpace(string(r)))
		default:
			return nil, fmt.Errorf("values must be strings, booleans or numbers, got %s", string(r))
		}
	}
	return out, nil
}

// Evaluate decides one request.
func (p *Policy) evaluate(req authzRequest) authzDecision {
	var d authzDecision
	for i, s := range p.Statements {
		if !s.matchesAction(req.Action) || !s.matchesResource(req.Resource) {
			continue
		}
		unmet := s.unmetCondition(req.Context)
		if s.Effect == "Deny" {
			if unmet == "" {
				d.ExplicitDeny = s.name(i)
				d.Allowed = false
				return d
			}
			continue
		}
		if unmet == "" {
			d.Allowed = true
		} else {
			d.Unmet = append(d.Unmet, s.name(i)+": "+unmet)
		}
	}
	if d.Allowed {
		d.Unmet = nil
	}
	return d
}

func (s *Statement) name(i int) string {
	if s.Sid != "" {
		return s.Sid
	}
	return fmt.Sprintf("Statement[%d]", i)
}

func (s *Statement) matchesAction(action string) bool {
	if s.Action != nil {
		return anyPattern(s.Action, action, actionMatch)
	}
	return !anyPattern(s.NotAction, action, actionMatch)
}

func (s *Statement) matchesResource(resource string) bool {
	if s.Resource != nil {
		return anyPattern(s.Resource, resource, arnMatch)
	}
	return !anyPattern(s.NotResource, resource, arnMatch)
}

func anyPattern(patterns []string, v string, match func(pattern, v string) bool) bool {
	for _, p := range patterns {
		if match(p, v) {
			return true
		}
	}
	return false
}

// actionMatch: service prefix and action name are case-insensitive; * and ? wildcards.
func actionMatch(pattern, action string) bool {
	return globMatch(strings.ToLower(pattern), strings.ToLower(action))
}

// arnMatch compares an ARN pattern with an ARN the way ArnLike does: the six
// colon-separated parts one by one (the last one keeps its colons and slashes), each
// with * and ? wildcards. "*" alone matches anything, including "*".
func arnMatch(pattern, arn string) bool {
	if pattern == "*" {
		return true
	}
	if !strings.HasPrefix(pattern, "arn:") || !strings.HasPrefix(arn, "arn:") {
		return globMatch(pattern, arn)
	}
	pp := strings.SplitN(pattern, ":", 6)
	ap := strings.SplitN(arn, ":", 6)
	if len(pp) != 6 || len(ap) != 6 {
		return false // not an ARN: IAM matches ARNs part by part
	}
	for i := range pp {
		if !globMatch(pp[i], ap[i]) {
			return false
		}
	}
	return true
}

// globMatch: * matches any run of characters (also none), ? exactly one.
func globMatch(pattern, s string) bool {
	// Iterative matcher with backtracking to the last star.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// unmetCondition returns "" when every condition holds, else the first that does not,
// described with what the request carried.
func (s *Statement) unmetCondition(ctx map[string][]string) string {
	for _, c := range s.Conditions {
		vals, present := ctx[strings.ToLower(c.Key)]
		if !c.holds(vals, present) {
			got := "absent"
			if present {
				got = fmt.Sprintf("%q", vals)
			}
			return fmt.Sprintf("condition %s %s %q not met (request: %s)", c.Operator, c.Key, c.Values, got)
		}
	}
	return ""
}

func (c *Condition) holds(vals []string, present bool) bool {
	if c.base == "Null" {
		want := len(c.Values) > 0 && strings.EqualFold(c.Values[0], "true")
		return want == !present
	}
	switch c.qualifier {
	case "ForAllValues":
		// True when every value of the request matches; vacuously true without values.
		for _, v := range vals {
			if !c.single(v) {
				return false
			}
		}
		return true
	case "ForAnyValue":
		for _, v := range vals {
			if c.single(v) {
				return true
			}
		}
		return false
	}
	if !present {
		return c.ifExists || negatedOperators[c.base]
	}
	if negatedOperators[c.base] {
		// A negated operator holds when no request value equals a policy value.
		for _, v := range vals {
			if !c.single(v) {
				return false
			}
		}
		return true
	}
	for _, v := range vals {
		if c.single(v) {
			return true
		}
	}
	return false
}

// single compares one request value with the condition's values (OR across them; for a
// negated operator: true when none matches).
func (c *Condition) single(v string) bool {
	var match func(p string) bool
	switch c.base {
	case "StringEquals", "StringNotEquals":
		match = func(p string) bool { return p == v }
	case "StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase":
		match = func(p string) bool { return strings.EqualFold(p, v) }
	case "StringLike", "StringNotLike":
		match = func(p string) bool { return globMatch(p, v) }
	case "ArnEquals", "ArnNotEquals", "ArnLike", "ArnNotLike":
		match = func(p string) bool { return arnMatch(p, v) }
	case "Bool":
		match = func(p string) bool { return strings.EqualFold(p, v) }
	default:
		return false
	}
	hit := false
	for _, p := range c.Values {
		if match(p) {
			hit = true
			break
		}
	}
	if negatedOperators[c.base] {
		return !hit
	}
	return hit
}

// RenderPolicy substitutes the placeholders of a policy template such as
// docs/aws/controller-policy.json: ${AWS_PARTITION}, ${AWS_REGION}, ${AWS_ACCOUNT_ID},
// ${CLUSTER_NAME}, ${NODE_ROLE}, ${INTERRUPTION_QUEUE}. Missing vars default from the
// emulator's options (partition "aws", node role KarpenterNodeRole-<cluster>, queue =
// cluster name). Unknown placeholders are left for ParsePolicy to report.
func (e *Emulator) RenderPolicy(template string, vars map[string]string) string {
	o := e.Options()
	all := map[string]string{
		"AWS_PARTITION":      "aws",
		"AWS_REGION":         o.Region,
		"AWS_ACCOUNT_ID":     o.AccountID,
		"CLUSTER_NAME":       o.ClusterName,
		"NODE_ROLE":          "KarpenterNodeRole-" + o.ClusterName,
		"INTERRUPTION_QUEUE": o.ClusterName,
	}
	for k, v := range vars {
		all[k] = v
	}
	return placeholderPattern.ReplaceAllStringFunc(template, func(m string) string {
		if v, ok := all[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// sortedContext is the context for messages, keys sorted.
func sortedContext(ctx map[string][]string) string {
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", k, ctx[k])
	}
	return b.String()
}
