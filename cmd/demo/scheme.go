package main

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// addAPIExtensions lets the demo's client install CRDs.
func addAPIExtensions(s *runtime.Scheme) error { return apiextensionsv1.AddToScheme(s) }
