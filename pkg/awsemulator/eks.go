package awsemulator

import (
	"net/http"
	"net/url"
	"strings"
)

// eksOps is the EKS operation table (REST-JSON: the action comes from method and path).
func eksOps() map[string]handler {
	return map[string]handler{
		"DescribeCluster": eksDescribeCluster,
		"ListClusters":    eksListClusters,
	}
}

// routeEKS maps method + path to an action and its path arguments.
func (c *call) routeEKS() *apiError {
	parts := strings.Split(strings.Trim(c.r.URL.EscapedPath(), "/"), "/")
	switch {
	case c.r.Method == http.MethodGet && len(parts) == 1:
		c.action = "ListClusters"
	case c.r.Method == http.MethodGet && len(parts) == 2:
		c.action = "DescribeCluster"
		name, err := url.PathUnescape(parts[1])
		if err != nil {
			return errorf(400, "InvalidParameterException", "invalid cluster name %q", parts[1])
		}
		c.pathArgs = []string{name}
	default:
		c.action = "Unknown"
		return errorf(404, "UnknownOperationException", "no EKS operation at %s %s", c.r.Method, c.r.URL.Path)
	}
	return nil
}

func eksDescribeCluster(c *call) (any, error) {
	name := c.pathArgs[0]
	var out map[string]any
	c.e.locked(func(s *state) {
		cl := s.cluster
		if cl == nil || cl.Name != name {
			return
		}
		subnets := []string{}
		for _, id := range sortedKeys(s.subnets) {
			if _, elb := s.subnets[id].Tags["kubernetes.io/role/elb"]; !elb {
				subnets = append(subnets, id)
			}
		}
		var clusterSG string
		for _, g := range s.securityGroups {
			if g.Name == "eks-cluster-sg-"+cl.Name {
				clusterSG = g.ID
			}
		}
		out = map[string]any{"cluster": map[string]any{
			"name":            cl.Name,
			"arn":             cl.ARN,
			"createdAt":       epoch(cl.CreatedAt),
			"version":         cl.Version,
			"endpoint":        cl.Endpoint,
			"roleArn":         cl.RoleARN,
			"status":          cl.Status,
			"platformVersion": cl.PlatformVersion,
			"certificateAuthority": map[string]any{
				"data": cl.CertificateAuthority,
			},
			"kubernetesNetworkConfig": map[string]any{
				"serviceIpv4Cidr": cl.ServiceIPv4CIDR,
				"ipFamily":        "ipv4",
			},
			"resourcesVpcConfig": map[string]any{
				"subnetIds":              subnets,
				"securityGroupIds":       []string{},
				"clusterSecurityGroupId": clusterSG,
				"vpcId":                  s.vpcID,
				"endpointPublicAccess":   true,
				"endpointPrivateAccess":  true,
				"publicAccessCidrs":      []string{"0.0.0.0/0"},
			},
			"accessConfig": map[string]any{"authenticationMode": "API_AND_CONFIG_MAP"},
			"tags":         map[string]string{},
		}}
	})
	if out == nil {
		return nil, errorf(404, "ResourceNotFoundException", "No cluster found for name: %s.", name)
	}
	return out, nil
}

func eksListClusters(c *call) (any, error) {
	var names []string
	c.e.locked(func(s *state) { names = []string{s.cluster.Name} })
	return map[string]any{"clusters": names}, nil
}
