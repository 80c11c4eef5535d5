"""The purple agent as A2A sees it: its card, its request handler, its messages.

The only modules of the purple agent that import the A2A SDK. :mod:`.card` announces the agent;
:mod:`.handler` answers each message in the request's own task (the SDK's ``RequestHandler``);
:mod:`.messages` reads the query and top_k a message carries and writes the ids the agent
answers with as the task's one artifact. Finished tasks are kept in the task store both agents use
(:mod:`services.common.task_store`).
"""
