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

// heldDevices asks kubelet's pod-resources API which containers hold which of our devices:
// the set of each container's sorted device IDs, joined with commas.
func heldDevices(ctx context.Context, socket string) (map[string]bool, error) {
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
	held := map[string]bool{}
	for _, pod := range r.PodResources {
		for _, c := range pod.Containers {
			for _, d := range c.Devices {
				if d.ResourceName != ResourceName {
					continue
				}
				ids := append([]string(nil), d.DeviceIds...)
				sort.Strings(ids)
				held[strings.Join(ids, ",")] = true
			}
		}
	}
	return held, nil
}
