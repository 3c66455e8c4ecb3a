package builtin

import (
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install" // its defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/storagemigration/storagemigration"

	"github.com/sqlkube/sqlkube/server/resource"
)

// StorageMigrationGroup is the group of StorageVersionMigrations.
const StorageMigrationGroup = "storagemigration.k8s.io"

// storageMigrationResources are the storagemigration.k8s.io/v1 types, served with
// kube-apiserver's own rules (kube). No controller migrates anything: a migration stays as
// written.
func storageMigrationResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(StorageMigrationGroup, "v1", "storageversionmigrations", "StorageVersionMigration", false, verbsAll, kube[storagemigrationv1.StorageVersionMigration](kubeRules{
			strategy: storagemigration.Strategy, status: storagemigration.StatusStrategy,
		}), withStatus),
	}
}
