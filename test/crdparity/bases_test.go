package crdparity_test

// kindSpec names one kind upstream ships and the valid manifests its cases
// start from: a minimal one (required fields only) and rich ones that fill
// most of upstream's schema. Each base must be accepted by upstream's API
// server; the test stops when one is not (the generator would be wrong).
type kindSpec struct {
	group, kind, version string
	namespaced           bool
	// minCases is the least number of cases the generator must produce.
	minCases int
	bases    []base
}

type base struct {
	name string
	yaml string
}

var kinds = []kindSpec{
	{group: "karpenter.sh", kind: "NodePool", version: "v1", minCases: 600, bases: []base{
		{"minimal", `
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`},
		{"rich", `
spec:
  weight: 50
  limits: {cpu: "1000", memory: 1000Gi, nvidia.com/gpu: 4}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m30s
    budgets:
    - {nodes: "10%"}
    - {nodes: "5", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Drifted, Underutilized]}
    - {nodes: "0", schedule: "@daily", duration: 10m, reasons: [Empty]}
  template:
    metadata:
      labels: {team: platform, karpenter.sh/capacity-type: spot}
      annotations: {example.com/owner: platform}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: 720h
      terminationGracePeriod: 48h
      taints: [{key: example.com/special, value: "true", effect: NoSchedule}]
      startupTaints: [{key: example.com/init, effect: NoExecute}]
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r], minValues: 2}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}
      - {key: karpenter.sh/capacity-type, operator: NotIn, values: [reserved]}
      - {key: topology.kubernetes.io/zone, operator: Exists}
`},
		{"static", `
spec:
  replicas: 3
  limits: {nodes: 10}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
`},
	}},
	{group: "karpenter.sh", kind: "NodeClaim", version: "v1", minCases: 300, bases: []base{
		{"minimal", `
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: []
`},
		{"rich", `
metadata:
  labels: {karpenter.sh/nodepool: default}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  expireAfter: Never
  terminationGracePeriod: 1h30m
  resources:
    requests: {cpu: "2", memory: 4Gi, pods: 10}
  taints: [{key: example.com/special, value: "true", effect: NoSchedule}]
  startupTaints: [{key: example.com/init, value: wait, effect: PreferNoSchedule}]
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge], minValues: 1}
  - {key: karpenter.sh/nodepool, operator: In, values: [default]}
  - {key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["65"]}
  - {key: topology.kubernetes.io/zone, operator: DoesNotExist}
`},
	}},
	{group: "karpenter.k8s.aws", kind: "EC2NodeClass", version: "v1", minCases: 600, bases: []base{
		{"minimal", `
spec:
  role: KarpenterNodeRole-dev
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: dev}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: dev}}]
`},
		{"rich", `
spec:
  role: KarpenterNodeRole-dev
  amiFamily: AL2023
  amiSelectorTerms:
  - {id: ami-0123456789abcdef0}
  - {name: my-ami-*, owner: self}
  - {tags: {team: platform}}
  - {ssmParameter: /aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id}
  subnetSelectorTerms:
  - {tags: {karpenter.sh/discovery: dev}}
  - {id: subnet-0123456789abcdef0}
  securityGroupSelectorTerms:
  - {tags: {karpenter.sh/discovery: dev}}
  - {id: sg-0123456789abcdef0}
  - {name: my-security-group}
  capacityReservationSelectorTerms:
  - {id: cr-0123456789abcdef0}
  - {tags: {team: platform}, ownerID: "123456789012"}
  - {instanceMatchCriteria: open}
  placementGroupSelector: {name: my-placement-group}
  associatePublicIPAddress: false
  detailedMonitoring: true
  context: cr-context
  cpuOptions: {nestedVirtualization: enabled}
  enclaveOptions: {enabled: true}
  instanceStorePolicy: RAID0
  ipPrefixCount: 2
  kubelet:
    maxPods: 110
    podsPerCore: 10
    systemReserved: {cpu: 100m, memory: 100Mi}
    kubeReserved: {cpu: 200m}
    evictionHard: {memory.available: 5%}
    evictionSoft: {nodefs.available: 10%}
    evictionSoftGracePeriod: {nodefs.available: 1m}
    evictionMaxPodGracePeriod: 60
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: true
    clusterDNS: [10.0.0.10]
  metadataOptions: {httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 2, httpTokens: required}
  networkInterfaces:
  - {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}
  - {networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}
  connectionTracking: {tcpEstablishedTimeout: 3600, udpStreamTimeout: 120, udpTimeout: 40}
  blockDeviceMappings:
  - deviceName: /dev/xvda
    rootVolume: true
    ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 3000, throughput: 125, encrypted: true, deleteOnTermination: true, kmsKeyID: "arn:aws:kms:us-west-2:111122223333:key/1234abcd"}
  - deviceName: /dev/xvdb
    ebs: {snapshotID: snap-0123456789abcdef0, volumeInitializationRate: 200}
  tags: {team: platform, example.com/cost-center: "42"}
  userData: |
    #!/bin/bash
    echo hello
`},
		{"profile", `
spec:
  instanceProfile: KarpenterNodeInstanceProfile-dev
  amiFamily: Bottlerocket
  amiSelectorTerms: [{alias: bottlerocket@v1.20.0}]
  subnetSelectorTerms: [{id: subnet-0123456789abcdef0}]
  securityGroupSelectorTerms: [{id: sg-0123456789abcdef0}]
`},
	}},
	{group: "karpenter.sh", kind: "NodeOverlay", version: "v1alpha1", minCases: 200, bases: []base{
		{"minimal", `
spec:
  requirements: []
`},
		{"rich", `
spec:
  weight: 10
  priceAdjustment: "-10%"
  capacity: {example.com/device: "2", hugepages-2Mi: 100Mi}
  requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5]}
  - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["4"]}
  - {key: karpenter.sh/capacity-type, operator: NotIn, values: [spot]}
  - {key: kubernetes.io/arch, operator: Exists}
`},
		{"price", `
spec:
  price: "0.5"
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
`},
	}},
	{group: "autoscaling.x-k8s.io", kind: "CapacityBuffer", version: "v1beta1", namespaced: true, minCases: 100, bases: []base{
		{"minimal", `
spec: {}
`},
		{"rich", `
spec:
  podTemplateRef: {name: buffer-pods}
  replicas: 3
  percentage: 10
  limits: {cpu: "10", memory: 20Gi}
  provisioningStrategy: buffer.x-k8s.io/active-capacity
`},
		{"scalable", `
spec:
  scalableRef: {apiGroup: apps, kind: Deployment, name: web}
  percentage: 20
`},
	}},
}
