package awsemulator

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LaunchTemplate is an EC2 launch template (one version: what Karpenter creates).
type LaunchTemplate struct {
	ID         string
	Name       string
	Version    int64
	Data       map[string]string // LaunchTemplateData.* request parameters, prefix removed (e.g. "ImageId", "SecurityGroupId.1")
	Tags       map[string]string
	CreateTime time.Time
}

// ImageID, UserData (base64) and InstanceType are the launch template's values.
func (lt *LaunchTemplate) ImageID() string      { return lt.Data["ImageId"] }
func (lt *LaunchTemplate) UserData() string     { return lt.Data["UserData"] }
func (lt *LaunchTemplate) InstanceType() string { return lt.Data["InstanceType"] }

// Tenancy is the template's Placement.Tenancy ("" when it sets none).
func (lt *LaunchTemplate) Tenancy() string { return lt.Data["Placement.Tenancy"] }

// SecurityGroupIDs lists SecurityGroupId.N.
func (lt *LaunchTemplate) SecurityGroupIDs() []string { return indexed(lt.Data, "SecurityGroupId") }

// InstanceProfile is the IamInstanceProfile name or ARN ("" if none).
func (lt *LaunchTemplate) InstanceProfile() (name, arn string) {
	return lt.Data["IamInstanceProfile.Name"], lt.Data["IamInstanceProfile.Arn"]
}

// TagsFor returns the tags of the template's TagSpecification for a resource type.
func (lt *LaunchTemplate) TagsFor(resourceType string) map[string]string {
	return tagSpecs(lt.Data, "TagSpecification")[resourceType]
}

func indexed(m map[string]string, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := m[name+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

// tagSpecs reads <prefix>.N.ResourceType / <prefix>.N.Tag.M.Key/Value from flattened params.
func tagSpecs(m map[string]string, prefix string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for i := 1; ; i++ {
		p := prefix + "." + strconv.Itoa(i)
		rt, ok := m[p+".ResourceType"]
		if !ok {
			return out
		}
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for j := 1; ; j++ {
			k, ok := m[p+".Tag."+strconv.Itoa(j)+".Key"]
			if !ok {
				break
			}
			out[rt][k] = m[p+".Tag."+strconv.Itoa(j)+".Value"]
		}
	}
}

// formMap flattens the form into single values.
func formMap(c *call) map[string]string {
	m := make(map[string]string, len(c.form))
	for k, v := range c.form {
		if len(v) > 0 {
			m[k] = v[0]
		}
	}
	return m
}

var launchTemplateNamePattern = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

func ec2CreateLaunchTemplate(c *call) (any, error) {
	if err := checkTenancy(c.str("LaunchTemplateData.Placement.Tenancy"), "launchTemplateData.placement.tenancy"); err != nil {
		return nil, err
	}
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	name := c.str("LaunchTemplateName")
	if !launchTemplateNamePattern.MatchString(name) {
		return nil, errorf(400, "InvalidLaunchTemplateName.MalformedException", "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.'")
	}
	data := map[string]string{}
	for k, v := range formMap(c) {
		if rest, ok := strings.CutPrefix(k, "LaunchTemplateData."); ok {
			data[rest] = v
		}
	}
	if data["UserData"] != "" && len(data["UserData"]) > 16384*4/3+4 {
		return nil, errorf(400, "InvalidUserData.Malformed", "User data is limited to 16384 bytes")
	}
	tags := tagSpecs(formMap(c), "TagSpecification")["launch-template"]
	var lt *LaunchTemplate
	var apiErr *apiError
	c.e.locked(func(s *state) {
		for _, existing := range s.launchTemplates {
			if existing.Name == name {
				apiErr = errorf(400, "InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
				return
			}
		}
		lt = &LaunchTemplate{ID: hexID("lt", "launch-template", name, s.nextSeq()), Name: name, Version: 1, Data: data,
			Tags: cloneTags(tags), CreateTime: time.Now().UTC().Truncate(time.Second)}
		s.launchTemplates[lt.ID] = lt
	})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.open("launchTemplate")
	writeLaunchTemplate(&b, c.e, lt)
	b.close("launchTemplate")
	return b.body(), nil
}

func writeLaunchTemplate(b *xb, e *Emulator, lt *LaunchTemplate) {
	b.leafAlways("launchTemplateId", lt.ID)
	b.leafAlways("launchTemplateName", lt.Name)
	b.timestamp("createTime", lt.CreateTime)
	b.leafAlways("createdBy", "arn:aws:iam::"+e.opts.AccountID+":user/emulator")
	b.integer("defaultVersionNumber", lt.Version)
	b.integer("latestVersionNumber", lt.Version)
	b.tagSet("tagSet", "item", "key", "value", lt.Tags)
}

var launchTemplateFilters = nameSet("launch-template-name", "launch-template-id", "create-time")

func ec2DescribeLaunchTemplates(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, launchTemplateFilters); err != nil {
		return nil, err
	}
	ids, names := c.list("LaunchTemplateId"), c.list("LaunchTemplateName")
	if err := idsWithMaxResults(c, append(ids, names...), "launchTemplateIds"); err != nil {
		return nil, err
	}
	var matched []LaunchTemplate
	var apiErr *apiError
	c.e.locked(func(s *state) {
		byName := map[string]*LaunchTemplate{}
		for _, lt := range s.launchTemplates {
			byName[lt.Name] = lt
		}
		for _, id := range ids {
			if s.launchTemplates[id] == nil {
				apiErr = errorf(400, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
				return
			}
		}
		for _, n := range names {
			if byName[n] == nil {
				apiErr = errorf(400, "InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
				return
			}
		}
		wantIDs, wantNames := nameSet(ids...), nameSet(names...)
		for _, id := range sortedKeys(s.launchTemplates) {
			lt := s.launchTemplates[id]
			if (len(wantIDs) > 0 || len(wantNames) > 0) && !wantIDs[lt.ID] && !wantNames[lt.Name] {
				continue
			}
			fields := fieldMap(map[string][]string{"launch-template-name": {lt.Name}, "launch-template-id": {lt.ID},
				"create-time": {lt.CreateTime.Format("2006-01-02T15:04:05.000Z")}})
			if matchFilters(filters, fields, lt.Tags) {
				cp := *lt
				cp.Tags = cloneTags(lt.Tags)
				matched = append(matched, cp)
			}
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	items, next, apiErr := paginate(c, matched, page{def: 0, min: 1, max: 200})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.open("launchTemplates")
	for i := range items {
		b.open("item")
		writeLaunchTemplate(&b, c.e, &items[i])
		b.close("item")
	}
	b.close("launchTemplates")
	b.leaf("nextToken", next)
	return b.body(), nil
}

func ec2DeleteLaunchTemplate(c *call) (any, error) {
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	id, name := c.str("LaunchTemplateId"), c.str("LaunchTemplateName")
	if id == "" && name == "" {
		return nil, errorf(400, "MissingParameter", "The request must include either a launch template ID or a launch template name.")
	}
	var deleted *LaunchTemplate
	c.e.locked(func(s *state) {
		for _, lt := range s.launchTemplates {
			if (id != "" && lt.ID == id) || (id == "" && lt.Name == name) {
				deleted = lt
				delete(s.launchTemplates, lt.ID)
				return
			}
		}
	})
	if deleted == nil {
		if id != "" {
			return nil, errorf(400, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
		return nil, errorf(400, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
	}
	var b xb
	b.open("launchTemplate")
	writeLaunchTemplate(&b, c.e, deleted)
	b.close("launchTemplate")
	return b.body(), nil
}

// LaunchTemplates returns every launch template sorted by name.
func (e *Emulator) LaunchTemplates() []LaunchTemplate {
	var out []LaunchTemplate
	e.locked(func(s *state) {
		for _, lt := range s.launchTemplates {
			cp := *lt
			cp.Tags = cloneTags(lt.Tags)
			cp.Data = cloneTags(lt.Data)
			out = append(out, cp)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
