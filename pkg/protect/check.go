package protect

import (
	"context"

	"github.com/regghost/regghost/pkg/backup"
)

// Check does what Run does before the lock, for a dry run that must refuse
// what the write would refuse: it reads this cluster's identity and
// compares the job's Source with it. It returns the identity.
func Check(ctx context.Context, job Job) (backup.Identity, error) {
	here, err := backup.ReadIdentity(ctx, job.Client, job.Prefix, job.Decrypt)
	if err != nil {
		return here, unchanged(err)
	}
	if err := checkSource(job, here); err != nil {
		return here, unchanged(err)
	}
	return here, nil
}
