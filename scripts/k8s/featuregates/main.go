// Prints the feature gates the upstream kubelet of this module knows (the kube features, those the staging
// modules add to the same gate, and the logging ones cmd/kubelet/app adds), each as a line of src/features/features-table.inc: name, default, stage and lock
// at the binary's own version. Run by scripts/gen-feature-gates.sh.
package main

import (
	"fmt"
	"sort"

	"k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/kubernetes/pkg/features"
)

func main() {
	// what cmd/kubelet/app adds to the same gate
	if err := logsapi.AddFeatureGates(feature.DefaultMutableFeatureGate); err != nil {
		panic(err)
	}
	all := feature.DefaultMutableFeatureGate.GetAll()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		s := all[featuregate.Feature(n)]
		stage := "FEATURE_GA"
		switch s.PreRelease {
		case featuregate.Alpha:
			stage = "FEATURE_ALPHA"
		case featuregate.Beta:
			stage = "FEATURE_BETA"
		case featuregate.Deprecated:
			stage = "FEATURE_DEPRECATED"
		}
		fmt.Printf("        { %q, %t, %s, %t },\n", n, s.Default, stage, s.LockToDefault)
	}
}
