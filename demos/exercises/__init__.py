"""The workbook: write the backward passes of the ops a Transformer is made of, check them, and
train the tiny GPT with them.

    python -m demos.exercises start DIR          # write the exercises (never over your files)
    python -m demos.exercises check DIR [NAME]   # check them: pass, or the kind of mistake, where, and a nudge
    python -m demos.exercises gpt DIR            # train the tiny GPT with your passing ops; plot both losses

Each speaks the learner's language: --lang zh (or MICROTENSOR_LANG=zh, or a Chinese locale) for Chinese.

workbook.py writes and loads the files, answers/ holds the reference answers, catalogue.py
what is checked and the typical mistakes, check.py the checker: scenarios.py runs the
learner's op in each scenario, compare.py compares numbers, messages.py says what is wrong,
sandbox.py runs it all in a child process with a time limit, blame.py finds which op breaks
attention, order.py checks backward_loop; substitute.py swaps your ops into the engine,
gpt.py trains.
"""
