#!/usr/bin/env bash
# Extract frames of every MSR-VTT clip for the text-to-frame benchmark of Zhu et al. (one frame per second):
#   FRAMES/<video_id>/000001.jpg, 000002.jpg, ...   (video_id = the clip's file name, e.g. video7010)
#
# usage: scripts/msrvtt_frames.sh VIDEOS_DIR FRAMES_DIR [FPS]
#   VIDEOS_DIR  MSR-VTT's clips (video0.mp4 ... video9999.mp4, e.g. MSRVTT/videos/all)
#   FRAMES_DIR  where the frames go; a video whose folder already holds frames is skipped (run again to resume)
#   FPS         frames per second (default 1, the paper's keyframe rate)
# Each video is written to a hidden temporary folder first and moved into place when ffmpeg succeeds, so a
# stopped run leaves no half-extracted video. Needs ffmpeg (apt-get install ffmpeg).
set -euo pipefail

usage="usage: $0 VIDEOS_DIR FRAMES_DIR [FPS]"
videos=${1:?$usage}
frames=${2:?$usage}
fps=${3:-1}
if ! command -v ffmpeg >/dev/null 2>&1; then
  echo "error: ffmpeg not found: install it (apt-get install ffmpeg) and run again" >&2
  exit 1
fi
if [ ! -d "$videos" ]; then
  echo "error: videos folder not found: $videos (download MSR-VTT's clips, video0.mp4 ... video9999.mp4)" >&2
  exit 1
fi
shopt -s nullglob
clips=("$videos"/*.mp4)
if [ ${#clips[@]} -eq 0 ]; then
  echo "error: no .mp4 file in $videos (download MSR-VTT's clips, video0.mp4 ... video9999.mp4)" >&2
  exit 1
fi
mkdir -p "$frames"
done_n=0
skipped=0
for clip in "${clips[@]}"; do
  vid=$(basename "$clip" .mp4)
  if [ -n "$(ls -A "$frames/$vid" 2>/dev/null)" ]; then
    skipped=$((skipped + 1))
    continue
  fi
  tmp="$frames/.$vid.tmp"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if ! ffmpeg -nostdin -loglevel error -i "$clip" -vf "fps=$fps" -q:v 2 "$tmp/%06d.jpg"; then
    rm -rf "$tmp"
    echo "error: ffmpeg failed on $clip (a damaged download? fetch it again)" >&2
    exit 1
  fi
  rm -rf "${frames:?}/$vid"
  mv "$tmp" "$frames/$vid"
  done_n=$((done_n + 1))
done
echo "extracted frames of $done_n videos into $frames ($skipped already there)"
