package awsemulator

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Authorization requests of IAM, SSM, SQS and EKS calls.
//
//   - IAM: the instance profile's ARN (with its path) and its aws:ResourceTag/*;
//     CreateInstanceProfile and TagInstanceProfile add aws:RequestTag/* and
//     aws:TagKeys; AddRoleToInstanceProfile also passes the role (iam:PassRole,
//     iam:PassedToService ec2.amazonaws.com: the profile hands the role to EC2);
//     GetRole the role's ARN; ListInstanceProfiles instance-profile<PathPrefix>*.
//     IAM is global: aws:RequestedRegion is the region the request was signed for.
//   - SSM: parameter ARNs; AWS's public parameters (/aws/service/...) have no account.
//   - SQS: the queue's ARN (from QueueUrl or QueueName).
//   - EKS: the cluster's ARN.
//   - ARC zonal shift: the managed resource's ARN (for a shift, the resource
//     it shifts), with arc-zonal-shift:ResourceIdentifier, the key the
//     shipped policy's condition scopes GetManagedResource by.

func iamAuthzRequests(c *call, s *state) []authzRequest {
	base := baseContext(credentialRegion(c))
	action := "iam:" + c.action
	acct := s.opts.AccountID
	profileARN := func(name string) (string, map[string]string) {
		if p := s.instanceProfiles[name]; p != nil {
			return p.ARN, p.Tags
		}
		return "arn:aws:iam::" + acct + ":instance-profile/" + name, nil
	}
	requestTags := func() map[string]string {
		tags := map[string]string{}
		for i := 1; i <= c.count("Tags.member"); i++ {
			p := "Tags.member." + strconv.Itoa(i)
			tags[c.str(p+".Key")] = c.str(p + ".Value")
		}
		return tags
	}
	switch c.action {
	case "CreateInstanceProfile":
		path := c.str("Path")
		if path == "" {
			path = "/"
		}
		arn := "arn:aws:iam::" + acct + ":instance-profile" + path + c.str("InstanceProfileName")
		return []authzRequest{{Action: action, Resource: arn, Context: withRequestTags(base, requestTags())}}
	case "GetInstanceProfile", "DeleteInstanceProfile", "RemoveRoleFromInstanceProfile":
		arn, tags := profileARN(c.str("InstanceProfileName"))
		return []authzRequest{{Action: action, Resource: arn, Context: withResourceTags(base, tags)}}
	case "AddRoleToInstanceProfile":
		arn, tags := profileARN(c.str("InstanceProfileName"))
		return []authzRequest{
			{Action: action, Resource: arn, Context: withResourceTags(base, tags)},
			passRole(s, c.str("RoleName"), "ec2.amazonaws.com", base["aws:requestedregion"][0]),
		}
	case "TagInstanceProfile":
		arn, tags := profileARN(c.str("InstanceProfileName"))
		ctx := withResourceTags(base, tags)
		return []authzRequest{{Action: action, Resource: arn, Context: withRequestTags(ctx, requestTags())}}
	case "ListInstanceProfiles":
		prefix := c.str("PathPrefix")
		if prefix == "" {
			prefix = "/"
		}
		return []authzRequest{{Action: action, Resource: "arn:aws:iam::" + acct + ":instance-profile" + prefix + "*", Context: base}}
	case "GetRole":
		name := c.str("RoleName")
		arn := "arn:aws:iam::" + acct + ":role/" + name
		if r := s.roles[name]; r != nil && r.ARN != "" {
			arn = r.ARN
		}
		return []authzRequest{{Action: action, Resource: arn, Context: base}}
	}
	return []authzRequest{{Action: action, Resource: "*", Context: base}}
}

func ssmAuthzRequests(c *call, s *state) []authzRequest {
	base := baseContext(s.opts.Region)
	var in struct {
		Name  string
		Names []string
	}
	_ = json.Unmarshal(c.body, &in)
	names := in.Names
	if in.Name != "" {
		names = append(names, in.Name)
	}
	if len(names) == 0 {
		return []authzRequest{{Action: "ssm:" + c.action, Resource: "*", Context: base}}
	}
	var out []authzRequest
	for _, n := range names {
		out = append(out, authzRequest{Action: "ssm:" + c.action, Resource: s.parameterARN(n), Context: base})
	}
	return out
}

// parameterARN: AWS's public parameters live in no account.
func (s *state) parameterARN(name string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	acct := s.opts.AccountID
	if strings.HasPrefix(name, "/aws/service/") {
		acct = ""
	}
	return "arn:aws:ssm:" + s.opts.Region + ":" + acct + ":parameter" + name
}

func sqsAuthzRequests(c *call) []authzRequest {
	o := c.e.opts
	base := baseContext(o.Region)
	var in struct {
		QueueUrl, QueueName string
	}
	_ = json.Unmarshal(c.body, &in)
	name := in.QueueName
	if in.QueueUrl != "" {
		name = in.QueueUrl[strings.LastIndex(in.QueueUrl, "/")+1:]
	}
	resource := "*"
	if name != "" {
		resource = "arn:aws:sqs:" + o.Region + ":" + o.AccountID + ":" + name
	}
	return []authzRequest{{Action: "sqs:" + c.action, Resource: resource, Context: base}}
}

func eksAuthzRequests(c *call) []authzRequest {
	o := c.e.opts
	base := baseContext(o.Region)
	resource := "*"
	if c.action == "DescribeCluster" && len(c.pathArgs) > 0 {
		resource = "arn:aws:eks:" + o.Region + ":" + o.AccountID + ":cluster/" + c.pathArgs[0]
	}
	return []authzRequest{{Action: "eks:" + c.action, Resource: resource, Context: base}}
}

func arcAuthzRequests(c *call, s *state) []authzRequest {
	ctx := baseContext(c.e.opts.Region)
	resource := ""
	switch c.action {
	case "GetManagedResource":
		resource = c.pathArgs[0]
	case "StartZonalShift":
		var in struct {
			ResourceIdentifier string `json:"resourceIdentifier"`
		}
		_ = json.Unmarshal(c.body, &in)
		resource = in.ResourceIdentifier
	case "CancelZonalShift", "UpdateZonalShift":
		if z := s.findShift(c.pathArgs[0]); z != nil {
			resource = z.ResourceIdentifier
		}
	}
	if resource == "" {
		return []authzRequest{{Action: "arc-zonal-shift:" + c.action, Resource: "*", Context: ctx}}
	}
	ctx["arc-zonal-shift:resourceidentifier"] = []string{resource}
	return []authzRequest{{Action: "arc-zonal-shift:" + c.action, Resource: resource, Context: ctx}}
}
