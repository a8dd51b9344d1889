package awsemulator

import (
	"strconv"
	"strings"
)

// How EC2 authorizes the calls Karpenter makes (what the emulator models):
//
//   - RunInstances: ec2:RunInstances on every resource the launch reads (image, subnet,
//     security groups, launch template, capacity reservation) with their
//     aws:ResourceTag/*, and on what it creates (instance, volume, network-interface,
//     spot-instances-request for spot) with aws:RequestTag/* = the request's tag
//     specification for that type over the launch template's. The instance also
//     carries ec2:Tenancy (the request's, overrides' or templates' Placement.Tenancy,
//     default when none sets it; once per tenancy asked for).
//   - CreateFleet: the same resources, each authorized for ec2:CreateFleet and (the
//     fleet launching on the caller's behalf) ec2:RunInstances, plus ec2:CreateFleet on
//     fleet/* with the fleet's request tags.
//   - Tagging on create: ec2:CreateTags on every created resource type that gets tags,
//     with ec2:CreateAction = the creating call.
//   - An instance profile in the launch: iam:PassRole on its role with
//     iam:PassedToService = ec2.amazonaws.com.
//   - CreateLaunchTemplate: launch-template/* with its request tags (+ CreateTags).
//   - CreateTags (standalone), TerminateInstances, RebootInstances, DeleteLaunchTemplate: each existing
//     resource named, with its aws:ResourceTag/* (CreateTags adds aws:RequestTag/* and
//     aws:TagKeys).
//   - Describe* and anything else: "*".
//
// Resources the call names that do not exist are not authorized: the handler answers
// their NotFound error (a dry run naming a launch template that does not exist yet is
// authorized on what it would create).

func (s *state) ec2ARN(kind, id string) string {
	if kind == "image" || kind == "snapshot" {
		return "arn:aws:ec2:" + s.opts.Region + "::" + kind + "/" + id
	}
	return "arn:aws:ec2:" + s.opts.Region + ":" + s.opts.AccountID + ":" + kind + "/" + id
}

// ec2Resource is the ARN and tags of an existing EC2 resource by ID; ok=false when it
// does not exist.
func (s *state) ec2Resource(id string) (arn string, tags map[string]string, ok bool) {
	switch {
	case strings.HasPrefix(id, "i-"):
		if in := s.instances[id]; in != nil {
			return s.ec2ARN("instance", id), in.Tags, true
		}
	case strings.HasPrefix(id, "lt-"):
		if lt := s.launchTemplates[id]; lt != nil {
			return s.ec2ARN("launch-template", id), lt.Tags, true
		}
	case strings.HasPrefix(id, "subnet-"):
		if sn := s.subnets[id]; sn != nil {
			return s.ec2ARN("subnet", id), sn.Tags, true
		}
	case strings.HasPrefix(id, "sg-"):
		if sg := s.securityGroups[id]; sg != nil {
			return s.ec2ARN("security-group", id), sg.Tags, true
		}
	case strings.HasPrefix(id, "ami-"):
		if im := s.images[id]; im != nil {
			return s.ec2ARN("image", id), im.Tags, true
		}
	case strings.HasPrefix(id, "pg-"):
		if pg := s.placementGroupByID(id); pg != nil {
			return s.ec2ARN("placement-group", pg.Name), pg.Tags, true
		}
	case strings.HasPrefix(id, "cr-"):
		if cr := s.capacityReservations[id]; cr != nil {
			return s.ec2ARN("capacity-reservation", id), nil, true
		}
	}
	return "", nil, false
}

func ec2AuthzRequests(c *call, s *state) []authzRequest {
	base := baseContext(c.e.opts.Region)
	action := "ec2:" + c.action
	existing := func(actions []string, ids ...string) []authzRequest {
		var out []authzRequest
		for _, id := range ids {
			arn, tags, ok := s.ec2Resource(id)
			if !ok {
				continue
			}
			for _, a := range actions {
				out = append(out, authzRequest{Action: a, Resource: arn, Context: withResourceTags(cloneContext(base), tags)})
			}
		}
		return out
	}
	switch c.action {
	case "RunInstances", "CreateFleet":
		return launchAuthz(c, s, base)
	case "CreateLaunchTemplate":
		tags := tagSpecs(formMap(c), "TagSpecification")["launch-template"]
		out := []authzRequest{{Action: action, Resource: s.ec2ARN("launch-template", "*"), Context: withRequestTags(cloneContext(base), tags)}}
		if len(tags) > 0 {
			ctx := withRequestTags(cloneContext(base), tags)
			ctx["ec2:createaction"] = []string{"CreateLaunchTemplate"}
			out = append(out, authzRequest{Action: "ec2:CreateTags", Resource: s.ec2ARN("launch-template", "*"), Context: ctx})
		}
		return out
	case "DeleteLaunchTemplate":
		id := c.str("LaunchTemplateId")
		if id == "" {
			for _, lt := range s.launchTemplates {
				if lt.Name == c.str("LaunchTemplateName") {
					id = lt.ID
				}
			}
		}
		return existing([]string{action}, id)
	case "TerminateInstances", "RebootInstances":
		return existing([]string{action}, c.list("InstanceId")...)
	case "CreateTags":
		tags := map[string]string{}
		for i := 1; i <= c.count("Tag"); i++ {
			p := "Tag." + strconv.Itoa(i)
			tags[c.str(p+".Key")] = c.str(p + ".Value")
		}
		var out []authzRequest
		for _, r := range existing([]string{action}, c.list("ResourceId")...) {
			r.Context = withRequestTags(r.Context, tags)
			out = append(out, r)
		}
		return out
	}
	return []authzRequest{{Action: action, Resource: "*", Context: base}}
}

// launchAuthz builds the requests of RunInstances and CreateFleet.
func launchAuthz(c *call, s *state, base map[string][]string) []authzRequest {
	form := formMap(c)
	fleet := c.action == "CreateFleet"
	actions := []string{"ec2:RunInstances"}
	if fleet {
		actions = []string{"ec2:CreateFleet", "ec2:RunInstances"}
	}
	requestTags := tagSpecs(form, "TagSpecification")

	// What the launch reads: launch templates, and the images, subnets, security
	// groups and capacity reservations named by the request, its overrides or the
	// templates.
	var lts []*LaunchTemplate
	var ids []string
	spot := false
	// The tenancies the launch asks for (request, overrides, templates):
	// the created instance is authorized once per tenancy, with ec2:Tenancy.
	tenancySet := map[string]bool{}
	add := func(m map[string]string, prefix string) {
		if t := m[prefix+"Placement.Tenancy"]; t != "" {
			tenancySet[t] = true
		}
		for _, k := range []string{"ImageId", "SubnetId", "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId", "Placement.GroupId"} {
			if v := m[prefix+k]; v != "" {
				ids = append(ids, v)
			}
		}
		if pg := s.placementGroups[m[prefix+"Placement.GroupName"]]; pg != nil {
			ids = append(ids, pg.ID)
		}
		ids = append(ids, indexed(m, prefix+"SecurityGroupId")...)
		for i := 1; hasKeyPrefix(m, prefix+"NetworkInterface."+strconv.Itoa(i)+"."); i++ {
			p := prefix + "NetworkInterface." + strconv.Itoa(i) + "."
			if v := m[p+"SubnetId"]; v != "" {
				ids = append(ids, v)
			}
			ids = append(ids, indexed(m, p+"SecurityGroupId")...)
		}
		if strings.EqualFold(m[prefix+"InstanceMarketOptions.MarketType"], "spot") {
			spot = true
		}
	}
	useLT := func(id, name string) {
		lt, err := s.findLaunchTemplate(id, name)
		if err != nil {
			return
		}
		lts = append(lts, lt)
		ids = append(ids, lt.ID)
		add(lt.Data, "")
	}
	if fleet {
		spot = c.str("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot"
		for i := 1; i <= c.count("LaunchTemplateConfigs"); i++ {
			p := "LaunchTemplateConfigs." + strconv.Itoa(i) + "."
			useLT(form[p+"LaunchTemplateSpecification.LaunchTemplateId"], form[p+"LaunchTemplateSpecification.LaunchTemplateName"])
			for j := 1; j <= c.count(p+"Overrides"); j++ {
				add(form, p+"Overrides."+strconv.Itoa(j)+".")
			}
		}
	} else {
		if id, name := form["LaunchTemplate.LaunchTemplateId"], form["LaunchTemplate.LaunchTemplateName"]; id != "" || name != "" {
			useLT(id, name)
		}
		add(form, "")
	}

	var out []authzRequest
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		arn, tags, ok := s.ec2Resource(id)
		if !ok {
			continue
		}
		for _, a := range actions {
			out = append(out, authzRequest{Action: a, Resource: arn, Context: withResourceTags(cloneContext(base), tags)})
		}
	}

	// What the launch creates, with the tags it will carry.
	created := []string{"instance", "volume", "network-interface"}
	if spot {
		created = append(created, "spot-instances-request")
	}
	createAction := c.action
	tagsFor := func(rt string) map[string]string {
		t := launchTags(lts, requestTags, rt)
		if len(t) == 0 {
			// Without a tag specification of its own (e.g. the network interface
			// of a dry run naming a template that does not exist yet), a created
			// resource is authorized with the instance's tags.
			t = launchTags(lts, requestTags, "instance")
		}
		return t
	}
	if fleet {
		out = append(out, createdAuthz("ec2:CreateFleet", s.ec2ARN("fleet", "*"), requestTags["fleet"], createAction, base)...)
	}
	tenancies := sortedKeys(tenancySet)
	if len(tenancies) == 0 {
		tenancies = []string{"default"}
	}
	for _, rt := range created {
		tags := tagsFor(rt)
		bases := []map[string][]string{base}
		if rt == "instance" {
			bases = nil
			for _, t := range tenancies {
				b := cloneContext(base)
				b["ec2:tenancy"] = []string{t}
				bases = append(bases, b)
			}
		}
		for _, b := range bases {
			for i, a := range actions {
				reqs := createdAuthz(a, s.ec2ARN(rt, "*"), tags, createAction, b)
				if i > 0 {
					reqs = reqs[:1] // CreateTags once per resource type
				}
				out = append(out, reqs...)
			}
		}
	}

	// The instance profile's role is passed to EC2.
	name, arn := form["IamInstanceProfile.Name"], form["IamInstanceProfile.Arn"]
	if name == "" && arn == "" {
		for _, lt := range lts {
			if n, a := lt.InstanceProfile(); n != "" || a != "" {
				name, arn = n, a
				break
			}
		}
	}
	if p := s.profileByNameOrARN(name, arn); p != nil {
		for _, r := range p.Roles {
			out = append(out, passRole(s, r, "ec2.amazonaws.com", c.e.opts.Region))
		}
	}
	return out
}

// launchTags are the tags a launch gives resources of type rt: the templates' tag
// specifications, overridden by the request's.
func launchTags(lts []*LaunchTemplate, requestTags map[string]map[string]string, rt string) map[string]string {
	t := map[string]string{}
	for _, lt := range lts {
		for k, v := range lt.TagsFor(rt) {
			t[k] = v
		}
	}
	for k, v := range requestTags[rt] {
		t[k] = v
	}
	return t
}

// createdAuthz authorizes creating a resource of arn with tags: the action itself with
// aws:RequestTag/*, and ec2:CreateTags with ec2:CreateAction when there are tags.
func createdAuthz(action, arn string, tags map[string]string, createAction string, base map[string][]string) []authzRequest {
	out := []authzRequest{{Action: action, Resource: arn, Context: withRequestTags(cloneContext(base), tags)}}
	if len(tags) > 0 {
		ctx := withRequestTags(cloneContext(base), tags)
		ctx["ec2:createaction"] = []string{createAction}
		out = append(out, authzRequest{Action: "ec2:CreateTags", Resource: arn, Context: ctx})
	}
	return out
}

// passRole is iam:PassRole of a role (by name) to a service.
func passRole(s *state, role, service, region string) authzRequest {
	arn := "arn:aws:iam::" + s.opts.AccountID + ":role/" + role
	if r := s.roles[role]; r != nil && r.ARN != "" {
		arn = r.ARN
	}
	return authzRequest{Action: "iam:PassRole", Resource: arn, Context: map[string][]string{
		"aws:requestedregion": {region}, "iam:passedtoservice": {service},
	}}
}

func hasKeyPrefix(m map[string]string, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
