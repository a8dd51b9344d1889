package awsemulator

import (
	"strings"
	"testing"
)

func mustPolicy(t *testing.T, doc string) *Policy {
	t.Helper()
	p, err := ParsePolicy(doc)
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	return p
}

func ctxOf(kv ...string) map[string][]string {
	m := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		k := strings.ToLower(kv[i])
		m[k] = append(m[k], kv[i+1])
	}
	return m
}

func TestPolicyEvaluation(t *testing.T) {
	p := mustPolicy(t, `{
	  "Version": "2012-10-17",
	  "Statement": [
	    {"Sid": "Launch", "Effect": "Allow", "Action": "ec2:Run*", "Resource": "arn:aws:ec2:us-west-2:*:instance/*",
	     "Condition": {"StringEquals": {"aws:RequestTag/team": ["a", "b"]}, "StringLike": {"aws:RequestTag/pool": "p-?*"}}},
	    {"Sid": "Tag", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
	     "Condition": {"ForAllValues:StringEquals": {"aws:TagKeys": ["Name", "owner"]}, "StringEqualsIfExists": {"aws:RequestTag/owner": "me"}}},
	    {"Sid": "AnyKey", "Effect": "Allow", "Action": "ec2:DeleteTags", "Resource": "*",
	     "Condition": {"ForAnyValue:StringLike": {"aws:TagKeys": "tmp/*"}}},
	    {"Sid": "Read", "Effect": "Allow", "NotAction": ["ec2:Run*", "ec2:Terminate*", "iam:*", "ec2:CreateTags", "ec2:DeleteTags", "s3:*", "ec2:Reboot*"], "Resource": "*",
	     "Condition": {"StringNotEquals": {"aws:RequestedRegion": "eu-west-1"}}},
	    {"Sid": "Terminate", "Effect": "Allow", "Action": "ec2:TerminateInstances", "NotResource": "arn:aws:ec2:*:*:instance/i-keep*",
	     "Condition": {"Null": {"aws:ResourceTag/owned": "false"}}},
	    {"Sid": "NoProd", "Effect": "Deny", "Action": "ec2:*", "Resource": "*", "Condition": {"StringEqualsIgnoreCase": {"aws:ResourceTag/env": "PROD"}}},
	    {"Sid": "Pass", "Effect": "Allow", "Action": "iam:PassRole", "Resource": "*",
	     "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:ec2:*:123456789012:*"}, "Bool": {"aws:SecureTransport": true}}},
	    {"Sid": "Bucket", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bucket/*",
	     "Condition": {"StringNotLike": {"s3:prefix": "secret/*"}}}
	  ]
	}`)
	instance := "arn:aws:ec2:us-west-2:123456789012:instance/*"
	for _, tc := range []struct {
		name    string
		req     authzRequest
		allowed bool
		deny    string
		unmet   string
	}{
		{"all conditions hold", authzRequest{"ec2:RunInstances", instance, ctxOf("aws:RequestTag/team", "b", "aws:RequestTag/pool", "p-1")}, true, "", ""},
		{"action match is case-insensitive", authzRequest{"EC2:runinstances", instance, ctxOf("aws:RequestTag/team", "a", "aws:RequestTag/pool", "p-1")}, true, "", ""},
		{"value not in list", authzRequest{"ec2:RunInstances", instance, ctxOf("aws:RequestTag/team", "c", "aws:RequestTag/pool", "p-1")}, false, "", "Launch: condition StringEquals aws:RequestTag/team"},
		{"absent key fails a positive operator", authzRequest{"ec2:RunInstances", instance, ctxOf("aws:RequestTag/pool", "p-1")}, false, "", "(request: absent)"},
		{"? needs a character", authzRequest{"ec2:RunInstances", instance, ctxOf("aws:RequestTag/team", "a", "aws:RequestTag/pool", "p-")}, false, "", "StringLike aws:RequestTag/pool"},
		{"resource outside the pattern", authzRequest{"ec2:RunInstances", "arn:aws:ec2:us-east-1:123456789012:instance/*", ctxOf("aws:RequestTag/team", "a", "aws:RequestTag/pool", "p-1")}, false, "", ""},
		{"ForAllValues: every key allowed", authzRequest{"ec2:CreateTags", instance, ctxOf("aws:TagKeys", "Name", "aws:TagKeys", "owner", "aws:RequestTag/owner", "me")}, true, "", ""},
		{"ForAllValues: one key not allowed", authzRequest{"ec2:CreateTags", instance, ctxOf("aws:TagKeys", "Name", "aws:TagKeys", "team")}, false, "", "ForAllValues:StringEquals aws:TagKeys"},
		{"ForAllValues: no keys is vacuously true; IfExists with absent key", authzRequest{"ec2:CreateTags", instance, ctxOf()}, true, "", ""},
		{"IfExists with a wrong value", authzRequest{"ec2:CreateTags", instance, ctxOf("aws:TagKeys", "owner", "aws:RequestTag/owner", "you")}, false, "", "StringEqualsIfExists"},
		{"ForAnyValue: one matching key", authzRequest{"ec2:DeleteTags", instance, ctxOf("aws:TagKeys", "a", "aws:TagKeys", "tmp/x")}, true, "", ""},
		{"ForAnyValue: no key", authzRequest{"ec2:DeleteTags", instance, ctxOf()}, false, "", "ForAnyValue:StringLike"},
		{"NotAction covers other actions", authzRequest{"ec2:DescribeSubnets", "*", ctxOf("aws:RequestedRegion", "us-west-2")}, true, "", ""},
		{"StringNotEquals excludes a value", authzRequest{"ec2:DescribeSubnets", "*", ctxOf("aws:RequestedRegion", "eu-west-1")}, false, "", "StringNotEquals aws:RequestedRegion"},
		{"StringNotEquals holds on an absent key", authzRequest{"ec2:DescribeSubnets", "*", ctxOf()}, true, "", ""},
		{"NotAction excludes listed actions", authzRequest{"iam:GetRole", "*", ctxOf()}, false, "", ""},
		{"NotResource and Null false", authzRequest{"ec2:TerminateInstances", "arn:aws:ec2:us-west-2:1:instance/i-1", ctxOf("aws:ResourceTag/owned", "x")}, true, "", ""},
		{"NotResource excludes", authzRequest{"ec2:TerminateInstances", "arn:aws:ec2:us-west-2:1:instance/i-keep1", ctxOf("aws:ResourceTag/owned", "x")}, false, "", ""},
		{"Null false needs the key", authzRequest{"ec2:TerminateInstances", "arn:aws:ec2:us-west-2:1:instance/i-1", ctxOf()}, false, "", "Null aws:ResourceTag/owned"},
		{"explicit deny wins over an allow", authzRequest{"ec2:TerminateInstances", "arn:aws:ec2:us-west-2:1:instance/i-1", ctxOf("aws:ResourceTag/owned", "x", "aws:ResourceTag/env", "prod")}, false, "NoProd", ""},
		{"ArnLike and Bool", authzRequest{"iam:PassRole", "arn:aws:iam::1:role/r", ctxOf("aws:SourceArn", "arn:aws:ec2:us-west-2:123456789012:instance/i-1", "aws:SecureTransport", "TRUE")}, true, "", ""},
		{"ArnLike compares the account part", authzRequest{"iam:PassRole", "arn:aws:iam::1:role/r", ctxOf("aws:SourceArn", "arn:aws:ec2:us-west-2:999:instance/i-1", "aws:SecureTransport", "true")}, false, "", "ArnLike aws:SourceArn"},
		{"StringNotLike", authzRequest{"s3:GetObject", "arn:aws:s3:::bucket/x", ctxOf("s3:prefix", "secret/a")}, false, "", "StringNotLike"},
		{"StringNotLike other value", authzRequest{"s3:GetObject", "arn:aws:s3:::bucket/x", ctxOf("s3:prefix", "public/a")}, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.evaluate(tc.req)
			if d.Allowed != tc.allowed || d.ExplicitDeny != tc.deny {
				t.Fatalf("allowed=%v deny=%q unmet=%q, want allowed=%v deny=%q", d.Allowed, d.ExplicitDeny, d.Unmet, tc.allowed, tc.deny)
			}
			if tc.unmet != "" && !strings.Contains(strings.Join(d.Unmet, "\n"), tc.unmet) {
				t.Fatalf("unmet %q does not mention %q", d.Unmet, tc.unmet)
			}
		})
	}
}

func TestGlobAndARNMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, v string
		want       bool
	}{
		{"*", "", true},
		{"a*b", "ab", true},
		{"a*b", "axxbxb", true},
		{"a*b", "axxbx", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*/*", "x/y/z", true},
	} {
		if got := globMatch(tc.pattern, tc.v); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pattern, tc.v, got)
		}
	}
	for _, tc := range []struct {
		pattern, arn string
		want         bool
	}{
		{"arn:aws:ec2:us-west-2::image/*", "arn:aws:ec2:us-west-2::image/ami-1", true},
		{"arn:aws:ec2:us-west-2::image/*", "arn:aws:ec2:us-west-2:123:image/ami-1", false},
		{"arn:aws:ec2:us-west-2:*:subnet/*", "arn:aws:ec2:us-west-2:123:subnet/subnet-1", true},
		{"arn:aws:iam::123:instance-profile/*", "arn:aws:iam::123:instance-profile/karpenter/us-west-2/c/uid/name", true},
		{"arn:aws:ec2:*:subnet/*", "arn:aws:ec2:us-west-2:123:subnet/subnet-1", false},
		{"*", "*", true},
	} {
		if got := arnMatch(tc.pattern, tc.arn); got != tc.want {
			t.Errorf("arnMatch(%q, %q) = %v", tc.pattern, tc.arn, got)
		}
	}
}

func TestParsePolicyErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{`, "not valid JSON"},
		{`{"Version":"2012-10-17"}`, "no Statement"},
		{`{"Statement":{"Effect":"Permit","Action":"ec2:*","Resource":"*"}}`, `Statement[0]: Effect must be "Allow" or "Deny"`},
		{`{"Statement":[{"Sid":"X","Effect":"Allow","Action":"ec2:*","NotAction":"ec2:A","Resource":"*"}]}`, "Statement[0] (X): Action and NotAction are mutually exclusive"},
		{`{"Statement":[{"Effect":"Allow","Action":"ec2:*"}]}`, "one of Resource or NotResource is required"},
		{`{"Statement":[{"Effect":"Allow","Action":"RunInstances","Resource":"*"}]}`, `action "RunInstances" is not of the form service:Action`},
		{`{"Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"*","Condition":{"NumericLessThan":{"k":1}}}]}`, `operator "NumericLessThan" is not supported`},
		{`{"Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"*","Condition":{"ForSomeValues:StringEquals":{"k":"v"}}}]}`, `unknown set operator qualifier "ForSomeValues"`},
		{`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"ec2:*","Resource":"*"}]}`, "Principal is not allowed"},
		{`{"Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"arn:aws:ec2:${AWS_REGION}::image/*"}]}`, "unrendered placeholder ${AWS_REGION}"},
	} {
		_, err := ParsePolicy(tc.doc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePolicy(%s) = %v, want an error containing %q", tc.doc, err, tc.want)
		}
	}
	// IAM's own policy variables are not placeholders.
	if _, err := ParsePolicy(`{"Statement":[{"Effect":"Allow","Action":"iam:GetUser","Resource":"arn:aws:iam::1:user/${aws:username}"}]}`); err != nil {
		t.Errorf("policy variable rejected: %v", err)
	}
}
