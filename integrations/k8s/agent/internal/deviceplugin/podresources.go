package deviceplugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// holder is a container that holds some of our devices.
type holder struct{ Namespace, Pod, Container string }

// heldDevices asks kubelet's pod-resources API which containers hold which of our devices:
// each container's sorted device IDs, joined with commas.
func heldDevices(ctx context.Context, socket string) (map[string]holder, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("kubelet's pod-resources socket: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := podresources.NewPodResourcesListerClient(conn).List(ctx, &podresources.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("kubelet's pod resources: %w", err)
	}
	held := map[string]holder{}
	for _, pod := range r.PodResources {
		for _, c := range pod.Containers {
			// kubelet may list a container's devices in one entry or one entry per device.
			var ids []string
			for _, d := range c.Devices {
				if d.ResourceName == ResourceName {
					ids = append(ids, d.DeviceIds...)
				}
			}
			if len(ids) > 0 {
				sort.Strings(ids)
				held[strings.Join(ids, ",")] = holder{pod.Namespace, pod.Name, c.Name}
			}
		}
	}
	return held, nil
}
