package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ActionMembersReplace marks the evidence `regghost members replace` saves
// before it removes a member: every member's snapshot, no keys, beside
// ReplaceRecordFile. Its backup file records one majority member's
// snapshot, so that `backup ls` lists the directory and `backup prune`
// may remove it once the replacement has ended.
const ActionMembersReplace = "members-replace"

// ReplaceRecordFile is the record of a members replacement, beside its
// evidence.
const ReplaceRecordFile = "replace.json"

// ReplaceUnderWay is the stage ReplaceRecordFile holds while the
// replacement is under way: a later run takes it up from that directory.
const ReplaceUnderWay = "removing"

// replacementUnderWay says why the backup in dir stays for a members
// replacement, or "": its record says the replacement is under way, or
// cannot be read.
func replacementUnderWay(dir string) string {
	path := filepath.Join(dir, ReplaceRecordFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	var rec struct {
		Stage  string `json:"stage"`
		Member string `json:"member"`
	}
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		return fmt.Sprintf("its %s cannot be read (%s): a members replacement may be under way; inspect it", ReplaceRecordFile, firstLine(err.Error()))
	}
	if rec.Stage != ReplaceUnderWay {
		return ""
	}
	return fmt.Sprintf("it is the evidence of a replacement of member %s still under way (%s): `regghost members replace %s --confirm` takes it up from here",
		rec.Member, ReplaceRecordFile, rec.Member)
}
