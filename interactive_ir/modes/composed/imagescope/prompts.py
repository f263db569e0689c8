"""The prompts of ImageScope: Figure 10 (stage 1 reasoner), Figure 11 (stage 2 reasoner),
Figure 12 (stage 3 evaluator), verbatim, with [[PLACEHOLDERS]] filled by the builders.

Figures 10 and 11 say "the final output should in JSON format" and show their worked example in prose
only; the authors' released prompt files end each example with its JSON rendering ({"step1": [[type,
text], ...], "step2": [three sentences]} and {"step1": [statements], "step2": [[question, "True"|"False"],
...]}), so the example here carries that JSON too: it is the only place the expected schema is stated.
The verifier question wrapper is the authors' ("Answer the question with Yes or No. {question}").

Our addition: every instruction, description, atomic instruction and question sits in a data block
(`backends.fence`), in the worked examples too (the model sees them laid out as its query), and a sentence
outside the blocks says they are data, never instructions (`data_rule`).
"""

from __future__ import annotations

from interactive_ir.backends.fence import CAPS, SHORT_RULE, clean, data_rule, fence

INSTRUCTION_TYPES = ("Addition", "Removal", "Modification", "Comparison", "Retention")
BLANK_REFERENCE = "A blank image."  # the paper's reference description when there is no reference image

STAGE1_REASONER = """# Task Description

You are given a description of Image Retrieval. The task is to combine information from both textual instruction and reference image or information to accurately retrieve images. You need to follow two steps to derive "what does the target image look like".

## Step 1: Instruction Classification and Impact Analysis

Classify the given instruction into the following types and identify how it affects the reference image. For each type, determine the specific elements or attributes of the reference image that are impacted. The instruction types are:

(1) Addition: Introduces new elements or features to the reference image. Identify which existing element the addition relates to or where it should be placed.

(2) Removal: Eliminates certain elements from the reference image. Identify which existing element is removed.

(3) Modification: Alters attributes of existing elements in the reference image. Determine which specific element is being modified and how.

(4) Comparison: Contrasts elements in the reference image using terms like "different," "same," "more," or "less.". Identify elements and attributes being compared.

(5) Retention: Specifies certain existing elements in the reference image to remain unchanged. Ensure these elements are noted for inclusion in the target image.

## Step 2: Target Image Description

Describe what the target image should look like based on the instruction and reference image analysis. Provide three sentences, each focusing on a different semantic aspect:

(1) Core Elements: Mention only the elements that appear in the instruction without necessary adjectives.

(2) Enhanced Details: Mention the elements in the instruction with necessary adjectives from the reference image.

(3) Comprehensive Synthesis: Mention both the elements in the instruction and relevant elements in the reference image with necessary adjectives.

The instruction and reference image description will be given to you to solve the task. Refer to the following examples and the final output should in JSON format.

---

Here is an example:

### Query

- Instruction: has the person holding a baby
- Reference Image: A woman with dark hair is smiling under a gray umbrella with a white flower hanging from it.

### Solve

1. **Step 1.** Based on the instruction:

- Addition: Make the woman holding a baby.

2. **Step 2.** Based on step 1, the target image should be like:

- A woman holds a baby.
- A woman with dark hair holds a baby under an umbrella.
- A woman with dark hair holds a baby and is smiling, under a gray umbrella.

```json
{
  "step1": [
    ["Addition", "Make the woman holding a baby."]
  ],
  "step2": [
    "A woman holds a baby.",
    "A woman with dark hair holds a baby under an umbrella.",
    "A woman with dark hair holds a baby and is smiling, under a gray umbrella."
  ]
}
```

---

Below is the query you need to solve:

### Query

- Instruction: [[INSTRUCTION]]
- Reference Image: [[REF_IMAGE_DESC]]
"""

STAGE2_REASONER = """# Task Description

The task of Atomic Proposition Generation involves breaking down a instruction into multiple simple, verifiable propositions, each having a unique answer that is either True (Yes) or False (No). Based on the provided instruction and a target image description, you need to break down the instruction into several atomic propositions and corresponding answers, following the two steps below.

## Step 1: Statement Sentence Conversion

Convert each atomic instruction into statement sentence. There are five types of atomic instruction: addition, removal, modification, comparison and retention.

## Step 2: Question Form Conversion

Convert each statement sentence into questions, also provide the ground truth answer based on the given instruction.

The instruction and atomic instructions will be given to you to solve the task.

---

Here is an example:

### Query

- Instruction: has the person holding a baby
- Atomic Instructions:
  - (1) Addition: Make the woman holding a baby.

### Solve

1. **Step 1.** Based on the atomic instructions, the statements are:

- (1) There is a woman holding a baby.

2. **Step 2.** Based on step 1, the questions and answers are:

- (1) Q: Is there a woman holding a baby? A: Yes. (True)

```json
{
  "step1": [
    "There is a woman holding a baby."
  ],
  "step2": [
    ["Is there a woman holding a baby?", "True"]
  ]
}
```

---

Below is the query you need to solve:

### Query

- Instruction: [[INSTRUCTION]]
- Atomic Instructions: [[ATOMIC_INST]]
"""

STAGE3_EVALUATOR = """Your task is to evaluate and determine if the right candidate image reflects the change described in the <INSTRUCTION> "[[INSTRUCTION]]". The instruction may describe:

1. A change from the left reference image to the right candidate image, or
2. The direct desired appearance of the right candidate image itself.

**Steps:**

1. For change-based instructions:
  - a. Analyze the left reference image as the starting point.
  - b. Examine the right candidate image for the described change.
2. For direct description instructions:
  - a. Focus solely on the right candidate image.
  - b. Determine if it matches the instruction's description.
3. Provide your answer as follows:
ANSWER: [Yes/No]
Where:
  - 'Yes' if the candidate image correctly matches the <INSTRUCTION>.
  - 'No' if it fails to match the <INSTRUCTION> .
4. After the ANSWER line, briefly explain how the candidate image does or does not match the <INSTRUCTION>.

**Important notes:**

- Base your analysis SOLELY on the <INSTRUCTION> and relevant image(s).
- Ignore elements irrelevant to the <INSTRUCTION> .
- Do not introduce criteria beyond the <INSTRUCTION> .

Always start with the ANSWER line, followed by your explanation on a new line.
"""

VERIFIER_QUESTION = "Answer the question with Yes or No. {question}"


def _one_line(text: str) -> str:
    return " ".join((text or "").split())


_EXAMPLE_INSTRUCTION = "- Instruction: has the person holding a baby\n"
_EXAMPLE_REFERENCE = ("- Reference Image: A woman with dark hair is smiling under a gray umbrella with a white flower "
                      "hanging from it.\n")
_EXAMPLE_ATOMIC = "- Atomic Instructions:\n  - (1) Addition: Make the woman holding a baby.\n"
_QUERY_HEAD = "Below is the query you need to solve:\n"


def _fenced_examples(template: str, *names: str) -> str:
    """The figure's worked example with its query fenced as the real query is, and the data rule before the query."""
    out = template.replace(_EXAMPLE_INSTRUCTION, f"- Instruction: {fence('instruction', 'has the person holding a baby')}\n")
    out = out.replace(_EXAMPLE_REFERENCE, f"- Reference Image: {fence('reference', _EXAMPLE_REFERENCE[19:-1], CAPS['caption'])}\n")
    out = out.replace(_EXAMPLE_ATOMIC, "- Atomic Instructions: "
                      + fence("atomic instructions", format_atomic([("Addition", "Make the woman holding a baby.")]),
                              cap=3000, one_line=False) + "\n")
    return out.replace(_QUERY_HEAD, f"{data_rule(*names)}\n\n{_QUERY_HEAD}")


def build_stage1(instruction: str, reference_description: str) -> str:
    """Figure 10 for a relative caption and the reference image's description (each in a data block)."""
    ref = _one_line(reference_description) or BLANK_REFERENCE
    return (_fenced_examples(STAGE1_REASONER, "instruction", "reference")
            .replace("[[INSTRUCTION]]", fence("instruction", instruction))
            .replace("[[REF_IMAGE_DESC]]", fence("reference", ref, CAPS["caption"])))


def format_atomic(atomic: list[tuple[str, str]]) -> str:
    """Stage 1's atomic instructions as Figure 11's list: "(1) Addition: ...", one per line (each cleaned)."""
    return "".join(f"\n  - ({i}) {clean(kind, 20)}: {clean(text, CAPS['instruction'])}"
                   for i, (kind, text) in enumerate(atomic[:12], 1))


def build_stage2(instruction: str, atomic: list[tuple[str, str]]) -> str:
    """Figure 11 for a relative caption and stage 1's atomic instructions (each in a data block)."""
    return (_fenced_examples(STAGE2_REASONER, "instruction", "atomic instructions")
            .replace("[[INSTRUCTION]]", fence("instruction", instruction))
            .replace("[[ATOMIC_INST]]", fence("atomic instructions", format_atomic(atomic), cap=7000, one_line=False)))


def build_stage3(instruction: str) -> str:
    """Figure 12 for a relative caption (the authors lower-case it and strip the final full stop), in a data block."""
    said = fence("instruction", _one_line(instruction).strip(" .").lower())
    return (STAGE3_EVALUATOR.replace('"[[INSTRUCTION]]"', said).rstrip("\n")
            + f"\n\n{data_rule('instruction')}\n")


def build_verifier_question(question: str) -> str:
    """The authors' wrapper around a proposition (a model's earlier reply: in a data block)."""
    return VERIFIER_QUESTION.format(question=f"{fence('question', question)} ({SHORT_RULE})")
