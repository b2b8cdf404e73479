package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/regghost/regghost/pkg/backup"
)

var (
	descBackups = prometheus.NewDesc("regghost_backups",
		"Backup directories regghost keeps under its backup directory.", []string{"root"}, nil)
	descBackupBytes = prometheus.NewDesc("regghost_backup_bytes",
		"Bytes regghost's backups hold (each purge's holds a snapshot the size of the database), on a filesystem etcd's data may share.", []string{"root"}, nil)
	descBackupFree = prometheus.NewDesc("regghost_backup_filesystem_free_bytes",
		"Free bytes of the backup directory's filesystem.", []string{"root"}, nil)
	descBackupReserve = prometheus.NewDesc("regghost_backup_filesystem_reserve_bytes",
		"Bytes every write of regghost leaves free on the backup directory's filesystem (a tenth of it, at least 1 GiB).", []string{"root"}, nil)
	descBackupError = prometheus.NewDesc("regghost_backup_read_errors",
		"1 when the backup directory could not be read at this scrape.", []string{"root"}, nil)
)

// BackupCollector exports what the backups under Root hold on their
// filesystem, read at each scrape (a directory listing and a few sizes).
type BackupCollector struct{ Root string }

// Describe sends the metrics' descriptions.
func (b BackupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBackups, descBackupBytes, descBackupFree, descBackupReserve, descBackupError} {
		ch <- d
	}
}

// Collect reads the backup directory and sends its metrics.
func (b BackupCollector) Collect(ch chan<- prometheus.Metric) {
	h, err := backup.HoldingsOf(b.Root)
	ch <- constMetric(descBackupError, prometheus.GaugeValue, b2f(err != nil), []string{b.Root})
	if err != nil {
		return
	}
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{{descBackups, float64(h.Backups)}, {descBackupBytes, float64(h.Bytes)}, {descBackupFree, float64(h.Free)}, {descBackupReserve, float64(h.Keep)}} {
		ch <- constMetric(m.d, prometheus.GaugeValue, m.v, []string{b.Root})
	}
}
