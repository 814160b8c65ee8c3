package plugin

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"gpuslice.io/k8s/scheduler/place"
)

// A gang is the pods of one namespace that carry the same gang label; all of them are
// placed or none (PodGroup-style labels, as the coscheduling plugin's).
const (
	LabelGang     = "gpuslice.io/gang"      // the gang's name
	LabelGangSize = "gpuslice.io/gang-size" // how many pods it has, 2 to 16
)

// gangOf is the pod's gang ("namespace/name") and size; "" when it has none. An error
// names the malformed label.
func gangOf(pod *v1.Pod) (string, int, error) {
	name, hasName := pod.Labels[LabelGang]
	sizeStr, hasSize := pod.Labels[LabelGangSize]
	if !hasName && !hasSize {
		return "", 0, nil
	}
	if !hasName || name == "" {
		return "", 0, fmt.Errorf("label %s without %s", LabelGangSize, LabelGang)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", 0, fmt.Errorf("label %s=%q: %s", LabelGang, name, strings.Join(errs, "; "))
	}
	if !hasSize {
		return "", 0, fmt.Errorf("label %s=%s without %s", LabelGang, name, LabelGangSize)
	}
	size, err := strconv.Atoi(sizeStr)
	if err != nil || size < 1 || size > place.MaxGPUs {
		return "", 0, fmt.Errorf("label %s=%q: not 1 to %d", LabelGangSize, sizeStr, place.MaxGPUs)
	}
	return pod.Namespace + "/" + name, size, nil
}

// gangMembers counts the gang's pods that exist and have not ended.
func (pl *Plugin) gangMembers(pod *v1.Pod, gang string) int {
	if pl.handle == nil || pl.handle.SharedInformerFactory() == nil {
		return 0
	}
	sel := labels.SelectorFromSet(labels.Set{LabelGang: pod.Labels[LabelGang]})
	pods, err := pl.handle.SharedInformerFactory().Core().V1().Pods().Lister().Pods(pod.Namespace).List(sel)
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			n++
		}
	}
	return n
}
