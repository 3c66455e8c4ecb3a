package builtin

import (
	storagev1 "k8s.io/api/storage/v1"
	_ "k8s.io/kubernetes/pkg/apis/storage/install" // storage's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/storage/csidriver"
	"k8s.io/kubernetes/pkg/registry/storage/csinode"
	"k8s.io/kubernetes/pkg/registry/storage/csistoragecapacity"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattachment"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattributesclass"

	"github.com/sqlkube/sqlkube/server/resource"
)

// StorageGroup is the group of the storage classes and CSI objects.
const StorageGroup = "storage.k8s.io"

// storageResources are the storage.k8s.io/v1 types kube-apiserver v1.37 serves by default,
// with its own rules (kube). Nothing attaches volumes: they are stored, not run.
func storageResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(StorageGroup, "v1", "csidrivers", "CSIDriver", false, verbsAll, kube[storagev1.CSIDriver](kubeRules{
			returnsDeleted: true,
			strategy:       csidriver.Strategy,
		}), nil),
		builtin(StorageGroup, "v1", "csinodes", "CSINode", false, verbsAll, kube[storagev1.CSINode](kubeRules{
			returnsDeleted: true,
			strategy:       csinode.Strategy, status: csinode.StatusStrategy,
		}), withStatus),
		builtin(StorageGroup, "v1", "csistoragecapacities", "CSIStorageCapacity", true, verbsAll, kube[storagev1.CSIStorageCapacity](kubeRules{
			strategy: csistoragecapacity.Strategy,
		}), nil),
		builtin(StorageGroup, "v1", "storageclasses", "StorageClass", false, verbsAll, kube[storagev1.StorageClass](kubeRules{
			returnsDeleted: true,
			strategy:       storageclass.Strategy,
		}), shortName("sc")),
		builtin(StorageGroup, "v1", "volumeattachments", "VolumeAttachment", false, verbsAll, kube[storagev1.VolumeAttachment](kubeRules{
			returnsDeleted: true,
			strategy:       volumeattachment.Strategy, status: volumeattachment.StatusStrategy,
		}), withStatus),
		builtin(StorageGroup, "v1", "volumeattributesclasses", "VolumeAttributesClass", false, verbsAll, kube[storagev1.VolumeAttributesClass](kubeRules{
			returnsDeleted: true,
			strategy:       volumeattributesclass.Strategy,
		}), shortName("vac")),
	}
}
