package awsemulator

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// iamOps is the IAM operation table (awsQuery protocol, API version 2010-05-08).
func iamOps() map[string]handler {
	return map[string]handler{
		"GetInstanceProfile":            iamGetInstanceProfile,
		"CreateInstanceProfile":         iamCreateInstanceProfile,
		"DeleteInstanceProfile":         iamDeleteInstanceProfile,
		"AddRoleToInstanceProfile":      iamAddRoleToInstanceProfile,
		"RemoveRoleFromInstanceProfile": iamRemoveRoleFromInstanceProfile,
		"TagInstanceProfile":            iamTagInstanceProfile,
		"ListInstanceProfiles":          iamListInstanceProfiles,
		"GetRole":                       iamGetRole,
	}
}

var iamNamePattern = regexp.MustCompile(`^[\w+=,.@-]+$`)

func iamName(c *call, param, field string, maxLen int) (string, *apiError) {
	v := c.str(param)
	if v == "" {
		return "", errorf(400, "ValidationError", "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", field)
	}
	if len(v) > maxLen || !iamNamePattern.MatchString(v) {
		return "", errorf(400, "ValidationError", "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+ and length less than or equal to %d", v, field, maxLen)
	}
	return v, nil
}

// iamTags reads Tags.member.N.Key / .Value.
func iamTags(c *call) (map[string]string, *apiError) {
	tags := map[string]string{}
	for i := 1; i <= c.count("Tags.member"); i++ {
		p := "Tags.member." + strconv.Itoa(i)
		k := c.str(p + ".Key")
		if k == "" || len(k) > 128 {
			return nil, errorf(400, "ValidationError", "1 validation error detected: Value at 'tags.%d.member.key' failed to satisfy constraint: Member must have length between 1 and 128", i)
		}
		tags[k] = c.str(p + ".Value")
	}
	if len(tags) > 50 {
		return nil, errorf(400, "LimitExceeded", "Cannot exceed quota for TagsPerInstanceProfile: 50")
	}
	return tags, nil
}

func noSuchProfile(name string) *apiError {
	return errorf(404, "NoSuchEntity", "Instance Profile %s cannot be found.", name)
}

func noSuchRole(name string) *apiError {
	return errorf(404, "NoSuchEntity", "The role with name %s cannot be found.", name)
}

func iamGetInstanceProfile(c *call) (any, error) {
	name, err := iamName(c, "InstanceProfileName", "instanceProfileName", 128)
	if err != nil {
		return nil, err
	}
	var b xb
	c.e.locked(func(s *state) {
		p := s.instanceProfiles[name]
		if p == nil {
			err = noSuchProfile(name)
			return
		}
		writeInstanceProfile(&b, s, p, true)
	})
	if err != nil {
		return nil, err
	}
	return b.body(), nil
}

func iamCreateInstanceProfile(c *call) (any, error) {
	name, err := iamName(c, "InstanceProfileName", "instanceProfileName", 128)
	if err != nil {
		return nil, err
	}
	path := c.str("Path")
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/") || len(path) > 512 {
		return nil, errorf(400, "ValidationError", "1 validation error detected: Value '%s' at 'path' failed to satisfy constraint: Member must satisfy regular expression pattern: (\\u002F)|(\\u002F[\\u0021-\\u007E]+\\u002F)", path)
	}
	tags, err := iamTags(c)
	if err != nil {
		return nil, err
	}
	var b xb
	c.e.locked(func(s *state) {
		if s.instanceProfiles[name] != nil {
			err = errorf(409, "EntityAlreadyExists", "Instance Profile %s already exists.", name)
			return
		}
		p := &InstanceProfile{
			Name: name, Path: path, ID: upperID("AIPA", "instance-profile", name, s.nextSeq()),
			ARN:  "arn:aws:iam::" + s.opts.AccountID + ":instance-profile" + path + name,
			Tags: tags, CreateDate: time.Now().UTC().Truncate(time.Second),
		}
		s.instanceProfiles[name] = p
		writeInstanceProfile(&b, s, p, true)
	})
	if err != nil {
		return nil, err
	}
	return b.body(), nil
}

func iamDeleteInstanceProfile(c *call) (any, error) {
	name, err := iamName(c, "InstanceProfileName", "instanceProfileName", 128)
	if err != nil {
		return nil, err
	}
	c.e.locked(func(s *state) {
		p := s.instanceProfiles[name]
		switch {
		case p == nil:
			err = noSuchProfile(name)
		case len(p.Roles) > 0:
			err = errorf(409, "DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
		default:
			delete(s.instanceProfiles, name)
		}
	})
	if err != nil {
		return nil, err
	}
	return xmlBody(""), nil
}

// iamProfileAndRole reads the two names AddRoleToInstanceProfile and
// RemoveRoleFromInstanceProfile take.
func iamProfileAndRole(c *call) (profile, role string, err *apiError) {
	if profile, err = iamName(c, "InstanceProfileName", "instanceProfileName", 128); err != nil {
		return "", "", err
	}
	if role, err = iamName(c, "RoleName", "roleName", 64); err != nil {
		return "", "", err
	}
	return profile, role, nil
}

func iamAddRoleToInstanceProfile(c *call) (any, error) {
	name, role, err := iamProfileAndRole(c)
	if err != nil {
		return nil, err
	}
	c.e.locked(func(s *state) {
		p := s.instanceProfiles[name]
		switch {
		case p == nil:
			err = noSuchProfile(name)
		case s.roles[role] == nil:
			err = noSuchRole(role)
		case len(p.Roles) > 0:
			err = errorf(409, "LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
		default:
			p.Roles = []string{role}
		}
	})
	if err != nil {
		return nil, err
	}
	return xmlBody(""), nil
}

func iamRemoveRoleFromInstanceProfile(c *call) (any, error) {
	name, role, err := iamProfileAndRole(c)
	if err != nil {
		return nil, err
	}
	c.e.locked(func(s *state) {
		p := s.instanceProfiles[name]
		if p == nil {
			err = noSuchProfile(name)
			return
		}
		for i, r := range p.Roles {
			if r == role {
				p.Roles = append(p.Roles[:i], p.Roles[i+1:]...)
				return
			}
		}
		if s.roles[role] == nil {
			err = noSuchRole(role)
			return
		}
		err = errorf(404, "NoSuchEntity", "The role with name %s cannot be found in instance profile %s.", role, name)
	})
	if err != nil {
		return nil, err
	}
	return xmlBody(""), nil
}

func iamTagInstanceProfile(c *call) (any, error) {
	name, err := iamName(c, "InstanceProfileName", "instanceProfileName", 128)
	if err != nil {
		return nil, err
	}
	tags, err := iamTags(c)
	if err != nil {
		return nil, err
	}
	c.e.locked(func(s *state) {
		p := s.instanceProfiles[name]
		if p == nil {
			err = noSuchProfile(name)
			return
		}
		merged := cloneTags(p.Tags)
		for k, v := range tags {
			merged[k] = v
		}
		if len(merged) > 50 {
			err = errorf(409, "LimitExceeded", "Cannot exceed quota for TagsPerInstanceProfile: 50")
			return
		}
		p.Tags = merged
	})
	if err != nil {
		return nil, err
	}
	return xmlBody(""), nil
}

// iamListInstanceProfiles: PathPrefix, Marker and MaxItems (default 100). As IAM does,
// listings leave tags out.
func iamListInstanceProfiles(c *call) (any, error) {
	prefix := c.str("PathPrefix")
	if prefix == "" {
		prefix = "/"
	}
	maxItems := 100
	if v := c.str("MaxItems"); v != "" {
		n, convErr := strconv.Atoi(v)
		if convErr != nil || n < 1 || n > 1000 {
			return nil, errorf(400, "ValidationError", "1 validation error detected: Value '%s' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000", v)
		}
		maxItems = n
	}
	marker := c.str("Marker")
	var b xb
	var err *apiError
	c.e.locked(func(s *state) {
		var names []string
		for _, n := range sortedKeys(s.instanceProfiles) {
			if strings.HasPrefix(s.instanceProfiles[n].Path, prefix) {
				names = append(names, n)
			}
		}
		start := 0
		if marker != "" {
			raw, decErr := url.QueryUnescape(marker)
			start = -1
			for i, n := range names {
				if decErr == nil && n > raw {
					start = i
					break
				}
			}
			if decErr != nil {
				err = errorf(400, "ValidationError", "Invalid Marker")
				return
			}
			if start < 0 {
				start = len(names)
			}
		}
		end := min(len(names), start+maxItems)
		b.open("InstanceProfiles")
		for _, n := range names[start:end] {
			b.open("member")
			writeInstanceProfileFields(&b, s, s.instanceProfiles[n], false)
			b.close("member")
		}
		b.close("InstanceProfiles")
		b.boolean("IsTruncated", end < len(names))
		if end < len(names) {
			b.leafAlways("Marker", url.QueryEscape(names[end-1]))
		}
	})
	if err != nil {
		return nil, err
	}
	return b.body(), nil
}

func iamGetRole(c *call) (any, error) {
	name, err := iamName(c, "RoleName", "roleName", 64)
	if err != nil {
		return nil, err
	}
	var b xb
	c.e.locked(func(s *state) {
		r := s.roles[name]
		if r == nil {
			err = noSuchRole(name)
			return
		}
		b.open("Role")
		writeRole(&b, r)
		b.close("Role")
	})
	if err != nil {
		return nil, err
	}
	return b.body(), nil
}

// assumeRolePolicy is the EC2 trust policy of node roles, URL-encoded as IAM returns it.
var assumeRolePolicy = url.QueryEscape(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`)

func writeRole(b *xb, r *Role) {
	b.leafAlways("Path", r.Path)
	b.leafAlways("RoleName", r.Name)
	b.leafAlways("RoleId", r.ID)
	b.leafAlways("Arn", r.ARN)
	b.leafAlways("CreateDate", r.CreateDate.UTC().Format(time.RFC3339))
	b.leafAlways("AssumeRolePolicyDocument", assumeRolePolicy)
	b.integer("MaxSessionDuration", 3600)
}

func writeInstanceProfile(b *xb, s *state, p *InstanceProfile, withTags bool) {
	b.open("InstanceProfile")
	writeInstanceProfileFields(b, s, p, withTags)
	b.close("InstanceProfile")
}

func writeInstanceProfileFields(b *xb, s *state, p *InstanceProfile, withTags bool) {
	b.leafAlways("Path", p.Path)
	b.leafAlways("InstanceProfileName", p.Name)
	b.leafAlways("InstanceProfileId", p.ID)
	b.leafAlways("Arn", p.ARN)
	b.leafAlways("CreateDate", p.CreateDate.UTC().Format(time.RFC3339))
	b.open("Roles")
	for _, name := range p.Roles {
		r := s.roles[name]
		if r == nil { // the role was deleted under the profile: IAM still lists what it knows
			r = &Role{Name: name, Path: "/", ID: upperID("AROA", "role", name), ARN: "arn:aws:iam::" + s.opts.AccountID + ":role/" + name, CreateDate: seedTime}
		}
		b.open("member")
		writeRole(b, r)
		b.close("member")
	}
	b.close("Roles")
	if withTags && len(p.Tags) > 0 {
		b.tagSet("Tags", "member", "Key", "Value", p.Tags)
	}
}
