"""The replay page: one static HTML file (inline CSS and JS, nothing fetched) that plays a Replay's tasks.

Every step is written into the page, so it reads without JavaScript too; the script adds the player: a task
picker, play/pause at real speed or faster, step back and forward, and a slider over the task's steps. Shown
images appear as tiles named by their ids (the page carries no images); with `images_url` the tiles show the
pictures from that folder or address (e.g. `file:///data/flickr8k/images` or the app's `/iir-media?path=`).
"""

from __future__ import annotations

import html
from pathlib import Path

from interactive_ir.study.analysis.timeline import Replay, Step, TaskTimeline

_LABELS = {"description": "typed the description", "answer": "answered", "skip": "skipped the question",
           "feedback": "marked", "reference": "chose the reference", "relative_caption": "typed the change",
           "search": "searched", "results": "results", "question_shown": "the system asked", "click": "clicked",
           "wrong_pick": "picked a wrong image", "found": "found the target", "give_up": "gave up",
           "budget_exhausted": "used up the rounds", "timeout": "ran out of time", "error": "error",
           "refused": "refused (not offered)",
           "paradata": "page"}

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:70em}
.controls{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ccc;display:flex;
 gap:.5em;flex-wrap:wrap;align-items:center;z-index:2}
.task h2{font-size:1.1em;margin:1em 0 .3em}.meta{color:#555;font-size:.9em}
ol.steps{list-style:none;padding:0}li.step{border-left:3px solid #ccd;margin:.4em 0;padding:.2em .6em}
li.step.now{border-left-color:#d60;background:#fff6ee}li.step.later{display:none}
.t{font-variant-numeric:tabular-nums;color:#666;font-size:.85em;margin-right:.5em}
.kind{font-weight:600}.text{margin-left:.3em}.detail{color:#666;font-size:.85em;margin-left:.5em}
.tiles{display:flex;flex-wrap:wrap;gap:4px;margin:.3em 0}
.tile{border:2px solid #bbb;padding:2px 4px;font-size:.75em;max-width:9em;overflow:hidden;background:#f7f7f7}
.tile img{display:block;max-width:8.5em;max-height:6em}
.tile.target{border-color:#c80;background:#fff1d6}.tile.rel{outline:3px solid #2a2}.tile.irr{outline:3px solid #c22}
.rank{font-size:.85em;color:#333}.status{font-weight:600}.notes{color:#a40}
.opts{margin:.2em 0 0 1em;font-size:.9em}
"""

JS = """
(function(){
 const tasks=[...document.querySelectorAll('section.task')];
 const pick=document.getElementById('task'),play=document.getElementById('play'),speed=document.getElementById('speed');
 const slider=document.getElementById('pos'),clock=document.getElementById('clock');
 let cur=0,pos=-1,timer=null;
 function steps(){return [...tasks[cur].querySelectorAll('li.step')];}
 function show(p){const s=steps();pos=Math.max(-1,Math.min(p,s.length-1));
  s.forEach((li,i)=>{li.classList.toggle('later',i>pos);li.classList.toggle('now',i===pos);});
  slider.max=s.length-1;slider.value=pos;
  clock.textContent=pos<0?'0.0 s':(parseFloat(s[pos].dataset.t).toFixed(1)+' s');
  if(pos>=0)s[pos].scrollIntoView({block:'nearest'});}
 function stop(){if(timer){clearTimeout(timer);timer=null;}play.textContent='Play';}
 function next(){const s=steps();if(pos>=s.length-1){stop();return;}
  const dt=pos<0?0:parseFloat(s[pos+1].dataset.dt)||0;const v=speed.value;
  const wait=v==='steps'?700:Math.min(dt*1000/parseFloat(v),60000);
  timer=setTimeout(()=>{show(pos+1);next();},wait);}
 function choose(i){stop();tasks.forEach((t,j)=>t.hidden=j!==i);cur=i;show(-1);}
 pick.addEventListener('change',()=>choose(parseInt(pick.value)));
 play.addEventListener('click',()=>{if(timer){stop();return;}if(pos>=steps().length-1)show(-1);
  play.textContent='Pause';next();});
 document.getElementById('back').addEventListener('click',()=>{stop();show(pos-1);});
 document.getElementById('fwd').addEventListener('click',()=>{stop();show(pos+1);});
 document.getElementById('all').addEventListener('click',()=>{stop();show(steps().length-1);});
 slider.addEventListener('input',()=>{stop();show(parseInt(slider.value));});
 document.body.classList.add('js');if(tasks.length)choose(0);
})();
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _tiles(step: Step, target: str, images_url: str) -> str:
    out = []
    for n, image in enumerate(step.shown, 1):
        cls = ["tile"] + (["target"] if image == target else [])
        mark = step.marks.get(image)
        cls += ["rel"] if mark is True else ["irr"] if mark is False else []
        pic = f'<img src="{_e(images_url.rstrip("/") + "/" + image)}" alt="">' if images_url else ""
        title = f"{n}. {image}" + (" (the target)" if image == target else "") + \
            (" marked relevant" if mark is True else " marked not relevant" if mark is False else "")
        out.append(f'<div class="{" ".join(cls)}" title="{_e(title)}">{pic}{n}. {_e(image)}</div>')
    return f'<div class="tiles">{"".join(out)}</div>' if out else ""


def _step_html(step: Step, target: str, images_url: str) -> str:
    label = _LABELS.get(step.type, step.type.replace("_", " "))
    rnd = f" (round {step.round})" if step.round is not None else ""
    parts = [f'<span class="t">{step.t:.1f} s (+{step.dt:.1f})</span><span class="kind">{_e(label)}{rnd}</span>']
    if step.text:
        parts.append(f'<span class="text">{_e(step.text)}</span>')
    if step.detail:
        parts.append(f'<span class="detail">{_e(step.detail)}</span>')
    if step.type == "results":
        rank = "not logged" if step.target_rank is None else str(step.target_rank)
        where = f", shown at {step.target_position}" if step.target_position else ", not shown"
        parts.append(f'<div class="rank">target rank {rank}{where}</div>')
        parts.append(_tiles(step, target, images_url))
    if step.options:
        parts.append('<ol class="opts">' + "".join(f"<li>{_e(o)}</li>" for o in step.options) + "</ol>")
    return (f'<li class="step {step.type}" data-t="{step.t}" data-dt="{step.dt}">' + "".join(parts) + "</li>")


def _task_html(n: int, tl: TaskTimeline, images_url: str) -> str:
    para = ""
    if tl.paradata:
        para = (f", left the page {tl.paradata.get('defocus_count', 0)} time(s), "
                f"{tl.paradata.get('time_away_s', 0):.1f} s away")
    head = (f'<h2>{_e(tl.participant)}: task {tl.task}, target {_e(tl.target)}</h2>'
            f'<div class="meta">condition {_e(tl.condition)}, <span class="status">{_e(tl.status)}</span> after '
            f'{tl.duration_s:.1f} s, {len(tl.steps)} step(s){_e(para)}</div>')
    steps = "".join(_step_html(s, tl.target, images_url) for s in tl.steps)
    return f'<section class="task" id="task-{n}">{head}<ol class="steps">{steps}</ol></section>'


def replay_html(rep: Replay, images_url: str = "", title: str = "") -> str:
    """The whole page."""
    title = title or f"Replay of {Path(rep.source).name}"
    options = "".join(f'<option value="{n}">{_e(t.participant)} task {t.task}: {_e(t.target)} ({_e(t.status)})'
                      f"</option>" for n, t in enumerate(rep.tasks))
    controls = (f'<div class="controls"><label>Task <select id="task">{options}</select></label>'
                '<button id="play">Play</button><button id="back">&lt; Step</button><button id="fwd">Step &gt;'
                '</button><button id="all">Show all</button><label>Speed <select id="speed">'
                '<option value="1">real time</option><option value="4">4x</option><option value="16">16x</option>'
                '<option value="steps" selected>one step a moment</option></select></label>'
                '<input type="range" id="pos" min="-1" value="-1"><span id="clock">0.0 s</span></div>')
    notes = "".join(f"<li>{_e(x)}</li>" for x in rep.notes)
    body = "".join(_task_html(n, t, images_url) for n, t in enumerate(rep.tasks))
    empty = "" if rep.tasks else "<p>Nothing to replay: the log holds no task events.</p>"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f'<style>{CSS}</style></head><body><h1>{_e(title)}</h1>'
            f'<p class="meta">{_e(rep.kind)} log {_e(rep.source)}: {len(rep.tasks)} task(s)</p>'
            f'{f"<ul class=notes>{notes}</ul>" if notes else ""}{controls}{empty}{body}'
            f"<script>{JS}</script></body></html>")


def write_replay(rep: Replay, out: Path, images_url: str = "") -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(replay_html(rep, images_url), encoding="utf-8")
    return out
